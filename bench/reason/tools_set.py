"""The tools corpus (tables and texts with numbers, EN and ZH) and 36 questions with gold answers.

Written by this project for the issue-17 tools figure: none of it comes from an evaluation dataset. Gold values
are computed here from the same rows the files are written from, so the set cannot disagree with its corpus.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

PRODUCTS = [  # product, price, units sold per quarter
    ("Widget", 25.5, 120, 140, 160, 150), ("Gadget", 40.0, 80, 95, 70, 110), ("Doohickey", 12.0, 300, 310, 280, 330),
    ("Sprocket", 7.25, 500, 420, 610, 580), ("Gizmo", 99.0, 20, 45, 30, 25),
]
BUDGET = [("Research", 1_200_000, 1_350_000, 42), ("Sales", 800_000, 760_000, 35), ("Support", 450_000, 520_000, 28),
          ("Legal", 300_000, 310_000, 9)]
REGIONS = [("North", "Ana", 182_000), ("North", "Ben", 143_500), ("South", "Chen", 201_250), ("South", "Dara", 98_000),
           ("East", "Eli", 156_700)]
PRODUCTS_ZH = [("苹果汁", 6.5, 1200, 1500), ("橙汁", 7.0, 900, 1100), ("矿泉水", 2.0, 5000, 6200), ("酸奶", 9.5, 700, 650)]
CITIES_ZH = [("杭州", 1237, 16850), ("宁波", 962, 9816), ("温州", 967, 12110), ("绍兴", 535, 8274)]

TEXT_EN = {
    "warehouse.txt": "Warehouse operations report\n\nThe warehouse shipped 3,120 parcels on Monday and 2,905 on Tuesday. "
                     "On Wednesday a conveyor fault cut shipments to 1,870 parcels.\n\nReturns were 214 parcels over the "
                     "three days.",
    "library.md": "# Library annual notes\n\nThe library lent 1,250 books in March and 1,480 books in April. "
                  "In May the reading room was closed for repairs.\n\nThe library has 38,400 books in its collection "
                  "and bought 1,150 new books this year.",
    "trip.txt": "Field trip budget\n\nThe bus costs 1,800 dollars and each of the 45 students pays a 20 dollar entrance "
                "fee. The school contributes 600 dollars towards lunch.",
}
TEXT_ZH = {
    "仓库.txt": "仓库运营周报\n\n仓库周一发出包裹3120件，周二发出2905件。周三因传送带故障，只发出1870件。",
    "图书馆.md": "# 图书馆年度记录\n\n图书馆三月借出图书1250册，四月借出1480册。五月阅览室因维修关闭。",
    "食堂.txt": "食堂采购记录\n\n食堂本月采购大米450公斤、面粉320公斤。大米每公斤5元，面粉每公斤4元。",
}


def write_corpus(folder: Path) -> Path:
    """The files (CSV, Markdown with a table, XLSX, texts) under ``folder``; returns it."""
    from openpyxl import Workbook

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "products.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["product", "price", "units_q1", "units_q2", "units_q3", "units_q4"])
        w.writerows(PRODUCTS)
    rows = "\n".join(f"| {d} | {a:,} | {b:,} | {h} |" for d, a, b, h in BUDGET)
    (folder / "budget.md").write_text("# Department budgets\n\nBudgets in dollars per year.\n\n"
                                      "| department | budget_2023 | budget_2024 | headcount |\n|---|---|---|---|\n"
                                      f"{rows}\n", encoding="utf-8")
    wb = Workbook()
    ws = wb.active
    ws.title = "sales"
    ws.append(["region", "rep", "sales"])
    for r in REGIONS:
        ws.append(list(r))
    wb.save(folder / "regional_sales.xlsx")
    with open(folder / "饮料销售.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["产品", "单价", "一季度销量", "二季度销量"])
        w.writerows(PRODUCTS_ZH)
    rows = "\n".join(f"| {c} | {p} | {a} |" for c, p, a in CITIES_ZH)
    (folder / "城市.md").write_text("# 浙江城市统计\n\n| 城市 | 常住人口（万人） | 面积（平方公里） |\n|---|---|---|\n"
                                   f"{rows}\n", encoding="utf-8")
    for name, text in {**TEXT_EN, **TEXT_ZH}.items():
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return folder


def _rev(q: int) -> dict[str, float]:
    return {p[0]: p[1] * p[1 + q] for p in PRODUCTS}


def questions() -> list[dict]:
    """36 questions: {id, lang, question, gold (number or name), kind}."""
    r2, r1, r4 = _rev(2), _rev(1), _rev(4)
    q = [
        ("Which product had the highest revenue in Q2?", max(r2, key=r2.get), "table"),
        ("What was the total revenue in Q2?", sum(r2.values()), "table"),
        ("What was the total revenue in Q1?", sum(r1.values()), "table"),
        ("Which product had the lowest revenue in Q4?", min(r4, key=r4.get), "table"),
        ("How many units of Sprocket were sold in the whole year?", sum(PRODUCTS[3][2:]), "table"),
        ("How many Widgets were sold in Q2 and Q3 together?", 140 + 160, "table"),
        ("What is the average price of the products?", round(sum(p[1] for p in PRODUCTS) / 5, 2), "table"),
        ("Which product sold the most units in Q3?", "Sprocket", "table"),
        ("What was Gizmo's revenue in Q2?", 99.0 * 45, "table"),
        ("What is the total budget of all departments in 2024?", sum(b[2] for b in BUDGET), "table"),
        ("By how much did the Support budget grow from 2023 to 2024?", 520_000 - 450_000, "table"),
        ("Which department has the largest headcount?", "Research", "table"),
        ("What is the total headcount of Research and Sales?", 42 + 35, "table"),
        ("What were the total sales of the North region?", 182_000 + 143_500, "table"),
        ("Which sales rep had the highest sales?", "Chen", "table"),
        ("What were the total sales of all reps?", sum(r[2] for r in REGIONS), "table"),
        ("How many parcels were shipped on Monday and Tuesday together?", 3120 + 2905, "text"),
        ("How many parcels were shipped over Monday, Tuesday and Wednesday?", 3120 + 2905 + 1870, "text"),
        ("How many more parcels were shipped on Monday than on Wednesday?", 3120 - 1870, "text"),
        ("How many books did the library lend in March and April together?", 1250 + 1480, "text"),
        ("How many more books were lent in April than in March?", 1480 - 1250, "text"),
        ("What do the bus and the students' entrance fees cost in total?", 1800 + 45 * 20, "text"),
    ]
    z2 = {p[0]: p[1] * p[3] for p in PRODUCTS_ZH}
    zh = [
        ("二季度哪种产品的销售额最高？", max(z2, key=z2.get), "table"),
        ("二季度所有产品的总销售额是多少？", sum(z2.values()), "table"),
        ("矿泉水一季度和二季度一共卖了多少？", 5000 + 6200, "table"),
        ("一季度销量最少的产品是什么？", "酸奶", "table"),
        ("四个城市的常住人口合计多少万人？", sum(c[1] for c in CITIES_ZH), "table"),
        ("面积最大的城市是哪个？", "杭州", "table"),
        ("杭州比宁波多多少万常住人口？", 1237 - 962, "table"),
        ("橙汁二季度的销售额是多少？", 7.0 * 1100, "table"),
        ("仓库周一和周二一共发出多少件包裹？", 3120 + 2905, "text"),
        ("仓库周一比周三多发出多少件包裹？", 3120 - 1870, "text"),
        ("图书馆三月和四月一共借出多少册图书？", 1250 + 1480, "text"),
        ("食堂本月采购大米和面粉一共多少公斤？", 450 + 320, "text"),
        ("食堂采购大米花了多少元？", 450 * 5, "text"),
        ("仓库三天一共发出多少件包裹？", 3120 + 2905 + 1870, "text"),
    ]
    out = [{"id": f"en{i}", "lang": "en", "question": t, "gold": g, "kind": k} for i, (t, g, k) in enumerate(q)]
    out += [{"id": f"zh{i}", "lang": "zh", "question": t, "gold": g, "kind": k} for i, (t, g, k) in enumerate(zh)]
    return out


if __name__ == "__main__":
    print(json.dumps(questions(), ensure_ascii=False, indent=1))
