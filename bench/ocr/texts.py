"""The text of the scanned test set (issue 39): two small appliance manuals this project wrote, one English, one
Chinese, four pages each (one column, two columns, a ruled table, a page fed in turned 90°), and questions about
them in a user's words. Fictional products; nothing here is copied from anywhere."""

PAGES = [
    {"id": "en-one", "lang": "en", "layout": "one-column", "title": "Harbor Line KX-200 Water Heater: Installation",
     "paragraphs": [
         "Unpack the KX-200 and check the tank for transport damage before you mount it. The heater weighs 23 kg "
         "empty, so two people should lift it onto the wall bracket.",
         "Leave a clearance of at least 45 cm below the heater and 10 cm on each side, so that the anode rod can be "
         "pulled out during maintenance.",
         "The heater runs on a 230 V supply and must be connected through a dedicated 16 A circuit breaker. "
         "The pressure relief valve opens at 7.5 bar; route its drain pipe to a frost-free outlet.",
         "Only a certified installer may commission the heater. The installer fills in the commissioning card "
         "inside the front cover, and the warranty starts on the date written there."]},
    {"id": "en-two", "lang": "en", "layout": "two-columns", "title": "KX-200 Maintenance Schedule",
     "paragraphs": [
         "In hard-water areas, descale the heating element every 6 months. Elsewhere once a year is enough.",
         "Check the pressure relief valve by lifting its lever for three seconds every 3 months.",
         "Replace the magnesium anode rod every 3 years, or sooner if less than half of it is left.",
         "Drain and flush the tank once a year to remove sediment from the bottom.",
         "The tank is guaranteed for 5 years and all other parts for 2 years, provided the maintenance above is "
         "recorded in the service log.",
         "For spare parts and service visits, call the Harbor Line service line on 0800 555 0142, open on weekdays "
         "from 8 am to 6 pm.",
         "Never run the heater with the tank empty: the element burns out within minutes.",
         "Write every service visit in the log at the back of this manual."]},
    {"id": "en-table", "lang": "en", "layout": "table", "title": "KX-200 Error Codes",
     "paragraphs": ["The display shows an error code when the heater stops. Look the code up below before you call "
                    "the service line."],
     "table": [["Code", "Meaning", "What to do"],
               ["E1", "No ignition", "Check the gas supply valve"],
               ["E4", "Water too hot", "Press reset and wait 10 minutes"],
               ["E7", "Sensor fault", "Call the service line"],
               ["E9", "Low water pressure", "Open the cold water inlet fully"]]},
    {"id": "en-rotated", "lang": "en", "layout": "one-column", "rotated": True, "title": "KX-200 Safety Notes",
     "paragraphs": [
         "Do not store flammable liquids or sprays within 1.5 m of the heater.",
         "Children under 8 years may use the hot water tap only under supervision.",
         "If you smell gas, close the gas valve, open the windows and leave the room. Do not switch lights on or off.",
         "Set the thermostat no higher than 60 degrees to avoid scalding; 55 degrees is enough for most homes."]},
    {"id": "zh-one", "lang": "zh", "layout": "one-column", "title": "晨光牌 MC-5 电饭煲使用说明",
     "paragraphs": [
         "感谢您选购晨光牌 MC-5 电饭煲。本机额定电压为 220 伏，额定功率为 860 瓦。",
         "内锅最多可煮 10 杯米。加水时请以内锅上的水位线为准，不要超过最高水位线。",
         "煮饭完成后电饭煲自动转入保温状态。保温时间请不要超过 12 小时，否则米饭容易变黄变硬。",
         "首次使用前，请先用清水煮一次并倒掉，以去除新机的气味。"]},
    {"id": "zh-two", "lang": "zh", "layout": "two-columns", "title": "MC-5 清洁与保养",
     "paragraphs": [
         "每次使用后，请待内锅冷却再用软布清洗，不要使用钢丝球。",
         "锅盖上的密封圈每 6 个月更换一次，可在售后网点购买。",
         "蒸汽阀每周拆下清洗一次，以免米汤堵塞出气孔。",
         "外壳只能用湿布擦拭，切勿将机身浸入水中。",
         "本产品整机保修两年，内胆涂层保修一年。",
         "如需维修，请拨打晨光客服电话 400-820-3366，服务时间为每天 9 点至 21 点。",
         "长期不用时，请拔下电源插头并将内锅晾干后收好。",
         "请保留购买发票，保修时需要出示。"]},
    {"id": "zh-table", "lang": "zh", "layout": "table", "title": "MC-5 故障代码",
     "paragraphs": ["显示屏出现故障代码时，请先对照下表处理，无法解决再联系客服。"],
     "table": [["代码", "含义", "处理方法"],
               ["E1", "温度传感器故障", "联系售后维修"],
               ["E3", "锅盖未盖好", "重新盖紧锅盖"],
               ["E5", "电压过低", "检查电源插座"],
               ["E8", "内锅未放入", "放入内锅后重试"]]},
    {"id": "zh-rotated", "lang": "zh", "layout": "one-column", "rotated": True, "title": "MC-5 安全须知",
     "paragraphs": [
         "请勿在水槽或燃气灶附近使用本机。",
         "电源线如有损坏，必须由厂家或售后网点更换。",
         "8 岁以下儿童须在成人监护下使用。",
         "工作时蒸汽阀会喷出高温蒸汽，请勿用手遮挡。"]},
]

# In a user's words; "split": dev questions guide the OCR path while it is built, heldout ones are left unseen.
QUESTIONS = [
    {"question": "How heavy is the KX-200 water heater?", "answer": ["23 kg"], "page": "en-one", "split": "dev"},
    {"question": "how much space do I need to leave under the heater", "answer": ["45 cm"], "page": "en-one",
     "split": "heldout"},
    {"question": "At what pressure does the relief valve open?", "answer": ["7.5 bar"], "page": "en-one",
     "split": "heldout"},
    {"question": "How often should I descale it if the water is hard?", "answer": ["6 months"], "page": "en-two",
     "split": "dev"},
    {"question": "what's the phone number for service", "answer": ["0800 555 0142"], "page": "en-two",
     "split": "heldout"},
    {"question": "How long is the tank guaranteed?", "answer": ["5 years"], "page": "en-two", "split": "dev"},
    {"question": "The display says E4, what do I do?", "answer": ["reset"], "page": "en-table", "split": "dev"},
    {"question": "What does error E7 mean?", "answer": ["Sensor fault"], "page": "en-table", "split": "heldout"},
    {"question": "How far away from the heater must flammable liquids be kept?", "answer": ["1.5 m"],
     "page": "en-rotated", "split": "dev"},
    {"question": "what temperature should the thermostat be set to at most", "answer": ["60"],
     "page": "en-rotated", "split": "heldout"},
    {"question": "MC-5 电饭煲的额定功率是多少？", "answer": ["860"], "page": "zh-one", "split": "dev"},
    {"question": "电饭煲最多能煮几杯米", "answer": ["10"], "page": "zh-one", "split": "heldout"},
    {"question": "密封圈多久换一次？", "answer": ["6 个月", "6个月"], "page": "zh-two", "split": "dev"},
    {"question": "晨光的客服电话是多少", "answer": ["400-820-3366"], "page": "zh-two", "split": "heldout"},
    {"question": "显示E3是什么意思？", "answer": ["锅盖未盖好"], "page": "zh-table", "split": "dev"},
    {"question": "出现E5代码应该怎么处理", "answer": ["检查电源插座"], "page": "zh-table", "split": "heldout"},
    {"question": "电源线坏了谁来换？", "answer": ["厂家", "售后"], "page": "zh-rotated", "split": "dev"},
    {"question": "多大以下的孩子要有大人看着才能用", "answer": ["8"], "page": "zh-rotated", "split": "heldout"},
]
