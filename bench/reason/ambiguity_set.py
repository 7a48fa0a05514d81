"""The ambiguity corpus (EN and ZH) and its questions: names with two senses in the documents (RAMDocs-style:
two people named Michael Jordan, Mercury the planet and the element, 苹果 the company and the fruit), documents
with one sense only, and clear questions — many naming the sense outright. Written by this project for issue 17's
figure; split into dev (threshold chosen there) and test (reported) by question id parity.
"""

from __future__ import annotations

from pathlib import Path

DOCS_EN = {
    "mercury-planet.md": ("Mercury (planet)", "Mercury is the smallest planet in the Solar System and the closest to the Sun. "
                          "It orbits the Sun every 88 days. Its surface temperature ranges from -173 to 427 degrees Celsius. "
                          "It was first observed through a telescope by Thomas Harriot and Galileo in the 17th century."),
    "mercury-element.md": ("Mercury (element)", "Mercury is a chemical element with the symbol Hg and atomic number 80. "
                           "It is the only metal that is liquid at room temperature; it freezes at -39 degrees Celsius. "
                           "It has been known since ancient times and was found in Egyptian tombs from 1500 BC."),
    "jaguar-animal.md": ("Jaguar (animal)", "The jaguar is a large cat native to the Americas. It can run at about 80 "
                         "kilometres per hour over short distances and weighs up to 158 kilograms. It lives in rainforests "
                         "from Mexico to Argentina."),
    "jaguar-cars.md": ("Jaguar Cars", "Jaguar is a British luxury car maker founded in 1922 in Blackpool. Its F-Type "
                       "sports car reaches a top speed of 300 kilometres per hour. The company is owned by Tata Motors."),
    "python-language.md": ("Python (programming language)", "Python is a programming language created by Guido van "
                           "Rossum and first released in 1991. It is known for its readable syntax and large standard "
                           "library."),
    "python-snake.md": ("Python (snake)", "Pythons are non-venomous snakes found in Africa, Asia and Australia. The "
                        "reticulated python can grow longer than 6 metres and kills its prey by constriction."),
    "apple-company.md": ("Apple Inc.", "Apple is an American technology company founded in 1976 by Steve Jobs and Steve "
                         "Wozniak in Cupertino. It makes the iPhone and the Mac. Its revenue in 2023 was 383 billion dollars."),
    "apple-fruit.md": ("Apple (fruit)", "The apple is the fruit of the apple tree, first grown in Central Asia. An apple "
                       "has about 95 calories. The world grew about 95 million tonnes of apples in 2022."),
    "amazon-company.md": ("Amazon (company)", "Amazon is an American online retailer founded by Jeff Bezos in 1994 in "
                          "Seattle. It employs about 1.5 million people."),
    "amazon-river.md": ("Amazon River", "The Amazon is a river in South America, about 6,400 kilometres long. It carries "
                        "more water than any other river and flows into the Atlantic Ocean."),
    "jordan-player.md": ("Michael Jordan (basketball player)", "Michael Jordan is an American former basketball player "
                         "born on 17 February 1963 in Brooklyn. He won six NBA championships with the Chicago Bulls."),
    "jordan-scientist.md": ("Michael I. Jordan (computer scientist)", "Michael I. Jordan is an American computer "
                            "scientist born on 25 February 1956. He is a professor at the University of California, "
                            "Berkeley, known for his work on machine learning."),
    "eiffel.md": ("Eiffel Tower", "The Eiffel Tower is a wrought-iron tower in Paris, completed in 1889 for the World's "
                  "Fair. It is 330 metres tall."),
    "photosynthesis.md": ("Photosynthesis", "Photosynthesis is the process by which plants use sunlight, water and carbon "
                          "dioxide to make glucose and oxygen. It takes place in the chloroplasts."),
    "reef.md": ("Great Barrier Reef", "The Great Barrier Reef off Queensland, Australia, is the largest coral reef system "
                "in the world, stretching over 2,300 kilometres."),
    "curie.md": ("Marie Curie", "Marie Curie was a Polish-French physicist and chemist who discovered polonium and radium. "
                 "She won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."),
    "versailles.md": ("Treaty of Versailles", "The Treaty of Versailles was signed on 28 June 1919 and ended the state of "
                      "war between Germany and the Allied Powers."),
    "acme.md": ("Acme Corporation annual report", "Acme Corporation sold 2.1 million units in 2023. Its operating margin "
                "was 14 percent in 2023, up from 11 percent in 2022."),
}
DOCS_ZH = {
    "苹果公司.md": ("苹果公司", "苹果公司是一家美国科技公司，1976年由史蒂夫·乔布斯等人在库比蒂诺创立，生产iPhone和Mac电脑。"),
    "苹果水果.md": ("苹果（水果）", "苹果是苹果树的果实，原产于中亚。一个苹果大约含有95千卡热量，富含膳食纤维。"),
    "小米公司.md": ("小米公司", "小米公司是一家中国电子产品公司，2010年由雷军在北京创立，以智能手机闻名。"),
    "小米谷物.md": ("小米（谷物）", "小米是粟的籽实，是中国北方的传统粮食作物，耐旱，生长期约90天。"),
    "长城建筑.md": ("长城（古代建筑）", "长城是中国古代的军事防御工程，明长城全长约8851公里，始建于春秋战国时期。"),
    "长城汽车.md": ("长城汽车", "长城汽车是一家中国汽车制造商，1984年成立，总部位于河北保定，生产哈弗系列SUV。"),
    "黄山山.md": ("黄山（山脉）", "黄山是安徽南部的著名山脉，主峰莲花峰海拔1864米，以奇松、怪石、云海闻名。"),
    "黄山市.md": ("黄山市", "黄山市是安徽省的地级市，1987年设立，下辖三区四县，常住人口约133万。"),
    "故宫.md": ("故宫", "故宫是明清两代的皇家宫殿，位于北京中轴线中心，始建于1406年，占地约72万平方米。"),
    "长江.md": ("长江", "长江是中国第一长河，全长约6300公里，流经11个省级行政区，最终注入东海。"),
    "熊猫.md": ("大熊猫", "大熊猫是中国特有的熊科动物，主要以竹子为食，野生种群约1864只，分布在四川、陕西和甘肃。"),
}

# (question, ambiguous?, type when ambiguous, history)
QUESTIONS = [
    ("What is Mercury's temperature?", True, "polysemy", ()),
    ("How fast can a Jaguar go?", True, "polysemy", ()),
    ("How long can Python get?", True, "polysemy", ()),
    ("When was Apple first grown?", False, "", ()),
    ("How many calories does an apple have?", False, "", ()),
    ("When was Apple founded?", False, "", ()),
    ("What is Apple?", True, "polysemy", ()),
    ("Tell me about Amazon.", True, "polysemy", ()),
    ("When was Michael Jordan born?", True, "polysemy", ()),
    ("What is Michael Jordan known for?", True, "polysemy", ()),
    ("What is Jaguar?", True, "polysemy", ()),
    ("What is Mercury?", True, "polysemy", ()),
    ("What is Python?", True, "polysemy", ()),
    ("What was its margin last year?", True, "reference", ()),
    ("How tall is it?", True, "reference", ()),
    ("When did they sign it?", True, "reference", ()),
    ("What is the freezing point of the element mercury?", False, "", ()),
    ("How long does the planet Mercury take to orbit the Sun?", False, "", ()),
    ("How fast can the jaguar cat run?", False, "", ()),
    ("Who owns the car maker Jaguar?", False, "", ()),
    ("Who created the Python programming language?", False, "", ()),
    ("How do python snakes kill their prey?", False, "", ()),
    ("How long is the Amazon River?", False, "", ()),
    ("Who founded the online retailer Amazon?", False, "", ()),
    ("When was the basketball player Michael Jordan born?", False, "", ()),
    ("Where does the computer scientist Michael I. Jordan teach?", False, "", ()),
    ("When was the Eiffel Tower completed?", False, "", ()),
    ("Where does photosynthesis take place?", False, "", ()),
    ("How long is the Great Barrier Reef?", False, "", ()),
    ("Which elements did Marie Curie discover?", False, "", ()),
    ("When was the Treaty of Versailles signed?", False, "", ()),
    ("What was Acme Corporation's operating margin in 2023?", False, "", ()),
    ("What was their margin in 2022?", False, "", ("How many units did Acme Corporation sell in 2023?",)),
    ("How tall is it?", False, "", ("When was the Eiffel Tower completed?",)),
    ("When was it signed?", False, "", ("What did the Treaty of Versailles end?",)),
    ("Who won six NBA championships?", False, "", ()),
    ("What does the Apple company make?", False, "", ()),
    ("How many people does the online retailer Amazon employ?", False, "", ()),
    ("What is the symbol of the element mercury?", False, "", ()),
    ("Where do jaguars live?", False, "", ()),
    ("苹果是什么时候创立的？", False, "", ()),
    ("苹果是什么？", True, "polysemy", ()),
    ("小米是什么？", True, "polysemy", ()),
    ("长城有多长？", False, "", ()),
    ("介绍一下长城。", True, "polysemy", ()),
    ("黄山有什么特点？", True, "polysemy", ()),
    ("它有多长？", True, "reference", ()),
    ("它是哪一年建成的？", True, "reference", ()),
    ("苹果公司生产什么产品？", False, "", ()),
    ("一个苹果含有多少热量？", False, "", ()),
    ("小米公司是谁创立的？", False, "", ()),
    ("小米的生长期有多长？", False, "", ()),
    ("长城汽车的总部在哪里？", False, "", ()),
    ("明长城全长多少公里？", False, "", ()),
    ("黄山主峰海拔多少米？", False, "", ()),
    ("黄山市常住人口有多少？", False, "", ()),
    ("故宫始建于哪一年？", False, "", ()),
    ("长江最终注入哪里？", False, "", ()),
    ("大熊猫主要吃什么？", False, "", ()),
    ("它最终注入哪里？", False, "", ("长江全长多少公里？",)),
    ("它的野生种群有多少只？", False, "", ("大熊猫主要吃什么？",)),
]


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (title, text) in {**DOCS_EN, **DOCS_ZH}.items():
        (folder / name).write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return folder


def questions() -> list[dict]:
    return [{"id": i, "split": "dev" if i % 2 == 0 else "test", "question": q, "ambiguous": amb, "type": ty,
             "history": list(h), "lang": "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else "en"}
            for i, (q, amb, ty, h) in enumerate(QUESTIONS)]
