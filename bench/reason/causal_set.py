"""The causal corpus (EN and ZH; documents that state chains across sentences, and distractors on the same topics)
and 32 causal questions with their gold chains. Written by this project for issue 17's causal figure.

A gold chain is a list of nodes, each a tuple of alternative key words; coverage is the share of nodes the answer
mentions. Direction: the pairs (cause, effect) an answer must never state the other way round.
"""

from __future__ import annotations

from pathlib import Path

DOCS = {
    "rail.md": ("Northern rail report", "Heavy rain in March flooded the river valley. This led to the closure of the "
                "main rail line. The closure caused shortages of fuel in the northern towns. Fuel prices in the towns "
                "rose by a third as a result of the shortages."),
    "rail-history.md": ("History of the northern railway", "The northern railway opened in 1881 and carries freight "
                        "and passengers between the port and the northern towns. It was electrified in 1972."),
    "bees.md": ("Orchard survey", "A cold spring reduced the number of bees in the orchards. Fewer bees led to poor "
                "pollination of the apple trees. Poor pollination caused a small apple harvest, and the small harvest "
                "drove up cider prices."),
    "orchard-guide.md": ("Orchard guide", "Apple trees need winter chill and well-drained soil. Most orchards in the "
                         "valley grow four varieties and harvest them in September."),
    "outage.md": ("Data centre incident review", "A failed cooling pump overheated the servers in hall B. The "
                  "overheating triggered an automatic shutdown of the storage cluster. Because of the shutdown, the "
                  "payment service was unavailable for four hours."),
    "datacentre.md": ("Data centre overview", "Hall B holds the storage cluster and two hundred servers. The payment "
                      "service runs in three regions and is tested every month."),
    "lake.md": ("Lake monitoring", "Fertiliser run-off from farms raised nitrogen levels in the lake. High nitrogen "
                "caused algae blooms in summer. The algae blooms lowered oxygen in the water, which led to fish "
                "deaths near the shore."),
    "fishing.md": ("Lake fishing rules", "Fishing on the lake is allowed from May to October with a licence. The "
                   "lake holds pike, perch and trout."),
    "factory.md": ("Plant closure note", "The steel plant closed in 2019 because of falling demand for steel. The "
                   "closure led to the loss of 2,000 jobs in the town. Job losses may have contributed to the fall in "
                   "house prices."),
    "school.md": ("School report", "The new reading programme started in 2021. Smaller classes led to more time with "
                  "each pupil, and more time with each pupil improved reading scores."),
    "wheat.zh.md": ("小麦产量报告", "由于持续干旱，小麦产量下降了三成。产量下降导致面粉价格上涨。这进而造成面包店利润减少。"),
    "wheat-guide.zh.md": ("小麦种植指南", "小麦适合在北方种植，一般在秋季播种，次年夏季收获。"),
    "traffic.zh.md": ("交通事故通报", "暴雪使高速公路路面结冰。路面结冰导致多起车辆追尾。追尾事故造成高速公路封闭六小时。"),
    "highway.zh.md": ("高速公路简介", "这条高速公路全长三百公里，连接省会和沿海城市，设有十二个服务区。"),
    "power.zh.md": ("停电事件说明", "变电站设备老化引发火灾。火灾导致城区大面积停电。停电使得地铁停运两小时。"),
    "subway.zh.md": ("地铁运营", "城市地铁共有五条线路，每天运送乘客约两百万人次。"),
}

Q = [  # question, gold chain nodes, (cause, effect) pairs whose reverse is a wrong direction
    ("Why were there fuel shortages in the northern towns?", [("rain",), ("flood",), ("closure", "closed"), ("fuel", "shortage")], [("closure", "shortage")]),
    ("What caused the closure of the main rail line?", [("rain",), ("flood",), ("closure", "closed")], [("flood", "closure")]),
    ("Why did fuel prices rise in the northern towns?", [("closure", "closed"), ("shortage",), ("price", "rose")], [("shortage", "price")]),
    ("What was the impact of the heavy rain in March?", [("rain",), ("flood",), ("closure", "closed"), ("shortage",)], [("rain", "flood")]),
    ("How did the flooding lead to fuel shortages?", [("flood",), ("closure", "closed"), ("shortage",)], [("closure", "shortage")]),
    ("Why was the apple harvest small?", [("cold",), ("bee",), ("pollination",), ("harvest",)], [("pollination", "harvest")]),
    ("What caused cider prices to go up?", [("pollination",), ("harvest",), ("cider",)], [("harvest", "cider")]),
    ("What was the effect of the cold spring on the orchards?", [("cold",), ("bee",), ("pollination",)], [("cold", "bee")]),
    ("Why was there poor pollination of the apple trees?", [("cold",), ("bee",), ("pollination",)], [("bee", "pollination")]),
    ("Why was the payment service unavailable?", [("pump", "cooling"), ("overheat",), ("shutdown",), ("payment", "unavailable")], [("shutdown", "unavailable")]),
    ("What caused the shutdown of the storage cluster?", [("pump", "cooling"), ("overheat",), ("shutdown",)], [("overheat", "shutdown")]),
    ("What was the impact of the failed cooling pump?", [("pump", "cooling"), ("overheat",), ("shutdown",), ("payment", "unavailable")], [("pump", "overheat")]),
    ("Why did fish die near the shore of the lake?", [("fertiliser", "run-off"), ("nitrogen",), ("algae",), ("oxygen",), ("fish",)], [("oxygen", "fish")]),
    ("What caused the algae blooms in the lake?", [("fertiliser", "run-off"), ("nitrogen",), ("algae",)], [("nitrogen", "algae")]),
    ("What was the effect of fertiliser run-off on the lake?", [("fertiliser", "run-off"), ("nitrogen",), ("algae",)], [("nitrogen", "algae")]),
    ("Why was there less oxygen in the lake water?", [("nitrogen",), ("algae",), ("oxygen",)], [("algae", "oxygen")]),
    ("Why did the steel plant close?", [("demand",), ("closed", "closure")], [("demand", "clos")]),
    ("What was the impact of the steel plant closure on the town?", [("closure", "closed"), ("jobs", "job")], [("closure", "job")]),
    ("Why did house prices fall in the town?", [("closure",), ("job",), ("house",)], [("job", "house")]),
    ("How did smaller classes lead to better reading scores?", [("smaller classes",), ("time",), ("reading scores", "scores")], [("time", "scores")]),
    ("What caused reading scores to improve?", [("smaller classes",), ("time",), ("scores",)], [("time", "scores")]),
    ("If the heavy rain had not flooded the valley, would the rail line have closed?", [("rain",), ("flood",), ("closure", "closed")], [("flood", "clos")]),
    ("为什么小麦产量下降了？", [("干旱",), ("产量",)], [("干旱", "产量")]),
    ("为什么面粉价格上涨？", [("干旱",), ("产量",), ("面粉",)], [("产量", "面粉")]),
    ("面包店利润减少的原因是什么？", [("产量",), ("面粉",), ("利润",)], [("面粉", "利润")]),
    ("持续干旱造成了什么影响？", [("干旱",), ("产量",), ("面粉",)], [("干旱", "产量")]),
    ("为什么高速公路封闭了六小时？", [("暴雪",), ("结冰",), ("追尾",), ("封闭",)], [("追尾", "封闭")]),
    ("车辆追尾的原因是什么？", [("暴雪",), ("结冰",), ("追尾",)], [("结冰", "追尾")]),
    ("暴雪对高速公路有什么影响？", [("暴雪",), ("结冰",), ("追尾",), ("封闭",)], [("暴雪", "结冰")]),
    ("为什么城区大面积停电？", [("老化",), ("火灾",), ("停电",)], [("火灾", "停电")]),
    ("地铁停运的原因是什么？", [("火灾",), ("停电",), ("地铁",)], [("停电", "地铁")]),
    ("变电站火灾导致了什么后果？", [("火灾",), ("停电",), ("地铁",)], [("火灾", "停电")]),
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (title, text) in DOCS.items():
        (folder / name).write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return folder


def questions() -> list[dict]:
    return [{"id": i, "question": q, "chain": [list(n) for n in chain], "pairs": [list(p) for p in pairs],
             "lang": "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else "en"} for i, (q, chain, pairs) in enumerate(Q)]
