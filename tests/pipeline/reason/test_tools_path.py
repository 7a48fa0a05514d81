"""The tools path (issue 17 §2): the gate routes arithmetic and table questions to a plan over sql / calculator /
search; steps run in order, a failing step goes back to the model once, numbers in the answer come from tool
outputs, and `ask --json` carries "plan" and "tools"."""

from __future__ import annotations

import json

import pytest

from ragclinic import Clinic
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.reason.plan import parse_plan
from ragclinic.pipeline.reason.route import choose_path
from ragclinic.tools.calculator import ToolError

CSV = "product,price,units_q1,units_q2\nWidget,25.5,120,140\nGadget,40,80,95\nGizmo,99,20,45\n"
TEXT = "Warehouse operations report\n\nThe warehouse shipped 3,120 parcels on Monday and 2,905 on Tuesday.\n"
FACT = "Office notes\n\nThe office cafeteria opens at eight in the morning and serves soup on Fridays.\n"


def _kb(tmp_path, rules, replies=("I do not know.",)):
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "products.csv").write_text(CSV, encoding="utf-8")
    (docs / "warehouse.txt").write_text(TEXT, encoding="utf-8")
    (docs / "office.txt").write_text(FACT, encoding="utf-8")
    lm = ScriptedLanguageModel(list(replies), rules=rules, yes_prob=0.9)
    c = Clinic.open(tmp_path / "kb", model=lm, embedder="fake", judge="llm", cache_dir=tmp_path / "cache")
    c.ingest([docs])
    return c, lm


def _table(c) -> str:
    from ragclinic.store.tables import list_tables

    return list_tables(c.kb.db.conn)[0]["name"]


def _plans(lm) -> int:
    return sum(1 for kind, msgs in lm.calls if kind == "chat" and msgs[0].content.startswith("You plan"))


def test_a_table_question_is_answered_by_sql_with_the_plan_and_tools_in_the_json(tmp_path):
    name = {}
    rules = [(r"Plan:$", lambda m: json.dumps([{"step": 1, "tool": "sql", "depends_on": [],
                                                 "input": f"SELECT SUM(price * units_q2) FROM {name['t']}"}])),
             (r"Tool results", "The total revenue in Q2 was 11,825 [1].")]
    c, lm = _kb(tmp_path, rules)
    name["t"] = _table(c)
    with c:
        res = c.consult("What was the total revenue in Q2?", doctor=False, cache=False)
    p = res.payload
    assert p["route"] == "answer" and "11,825" in p["answer"], p
    assert p["plan"][0]["steps"][0]["tool"] == "sql" and p["plan"][0]["error"] is None
    [call] = p["tools"]
    assert set(call) >= {"name", "input", "output", "seconds", "error"} and call["error"] is None
    assert "11,825" in call["output"]
    assert [x["path"].endswith("products.csv") for x in p["citations"]] == [True]
    assert p["claims"][0]["verdict"] == "supported" and p["claims"][0]["checked_by"] == "tools"
    gate = res.trace.span("gate").outputs
    assert gate["decision"]["path"] == "tools" and gate["tables"] == [name["t"]]


def test_text_arithmetic_goes_through_the_calculator_and_a_made_up_number_is_replaced(tmp_path):
    rules = [(r"Plan:$", json.dumps([{"step": 1, "tool": "calculator", "input": "3,120 + 2,905", "depends_on": []}])),
             (r"Tool results", "The warehouse shipped 6,125 parcels on the two days [1].")]  # the model's own sum
    c, lm = _kb(tmp_path, rules)
    with c:
        a = c.ask("How many parcels were shipped on Monday and Tuesday together?", doctor=False, cache=False)
    assert "6,025" in a.text and "6,125" not in a.text, a.text
    assert any(f.startswith("tools_answer_replaced") for f in a.flags)
    assert a.tools[0]["output"] == "6,025" and a.citations[0].path.endswith("warehouse.txt")
    plan_prompt = next(m for kind, m in lm.calls if kind == "chat" and m[0].content.startswith("You plan"))
    assert "Tables:\n(no tables)" in plan_prompt[1].content  # the products table shares no word with the question


def test_a_failing_step_goes_back_to_the_model_once(tmp_path):
    name = {}
    plans = iter(["SELECT SUM(revenue) FROM {t}", "SELECT SUM(price * units_q1) FROM {t}"])
    rules = [(r"Plan:$|corrected plan",
              lambda m: json.dumps([{"step": 1, "tool": "sql", "input": next(plans).format(t=name["t"])}])), (r"Tool results", "Q1 revenue was 8,240 [1].")]
    c, lm = _kb(tmp_path, rules)
    name["t"] = _table(c)
    with c:
        a = c.ask("What was the total revenue in Q1?", doctor=False, cache=False)
    assert _plans(lm) == 2 and "8,240" in a.text
    assert "no such column" in a.tools[0]["error"] and "units_q1" in a.tools[0]["error"]  # the columns are named
    second = [m for kind, m in lm.calls if kind == "chat" and m[0].content.startswith("You plan")][1]
    assert "That plan failed" in second[-2].content
    assert any(f.startswith("replanned") for f in a.flags)


def test_a_plan_that_fails_twice_is_answered_directly_and_recorded(tmp_path):
    rules = [(r"Plan:$|corrected plan", "I would add the numbers."), (r"Tool results", "never asked")]
    c, lm = _kb(tmp_path, rules, replies=("The warehouse shipped 3,120 parcels on Monday [1].",))
    with c:
        a = c.ask("How many parcels were shipped on Monday and Tuesday together?", doctor=False, cache=False)
    assert _plans(lm) == 2 and len(a.plan) == 2 and not a.tools
    assert any(f.startswith("tools_failed") for f in a.flags) and "3,120" in a.text


def test_a_query_that_finds_nothing_is_no_result(tmp_path):
    """MAX over no matching rows is NULL, not an answer: "The result: None" was shown for a thermostat question a
    scanned manual's error-code table could not answer (bench/RESULTS.md issue 39). It goes back to the model,
    then the question is answered directly from the passages."""
    name = {}
    plans = iter(["SELECT MAX(price) FROM {t} WHERE product = 'Thermostat'", "SELECT price FROM {t} WHERE 0"])
    rules = [(r"Plan:$|corrected plan",
              lambda m: json.dumps([{"step": 1, "tool": "sql", "input": next(plans).format(t=name["t"])}])),
             (r"Tool results", "never asked")]
    c, lm = _kb(tmp_path, rules, replies=("The warehouse shipped 3,120 parcels on Monday [1].",))
    name["t"] = _table(c)
    with c:
        a = c.ask("What is the highest price of a thermostat in the products table?", doctor=False, cache=False)
    assert _plans(lm) == 2 and "None" not in a.text
    assert "found nothing (NULL)" in a.tools[0]["error"] and "found nothing (no rows)" in a.tools[1]["error"]
    assert any(f.startswith("tools_failed") for f in a.flags)


def test_a_plain_question_pays_nothing(tmp_path):
    c, lm = _kb(tmp_path, [(r"Plan:$", "[]")], replies=("The cafeteria opens at eight [1].",))
    with c:
        res = c.consult("When does the office cafeteria open?", doctor=False, cache=False)
    assert _plans(lm) == 0 and res.payload["plan"] == [] and res.payload["tools"] == []
    assert res.trace.span("gate").outputs["decision"]["path"] == "direct"


def test_the_tools_path_can_be_turned_off(tmp_path):
    c, lm = _kb(tmp_path, [(r"Plan:$", "[]")], replies=("Not sure [1].",))
    c.close()
    with Clinic.open(tmp_path / "kb", model=lm, embedder="fake", judge="llm", cache_dir=tmp_path / "cache",
                     tools_path=False) as c2:
        c2.ask("How many parcels were shipped on Monday and Tuesday together?", doctor=False, cache=False)
    assert _plans(lm) == 0


@pytest.mark.parametrize("q, tables, numbers, path", [
    ("How many parcels were shipped on Monday and Tuesday together?", [], True, "tools"),
    ("仓库周一和周二一共发出多少件包裹？", [], True, "tools"),
    ("Which product had the highest revenue in Q2?", [{"name": "t"}], True, "tools"),
    ("Which product had the highest revenue in Q2?", [], True, "direct"),  # a superlative over text: stated
    ("When was the warehouse opened?", [{"name": "t"}], True, "direct"),
    ("What is the total?", [], False, "direct"),  # nothing to add up
])
def test_route(q, tables, numbers, path):
    class P:
        class chunk:
            text = "3,120 on Monday and 2,905 on Tuesday" if numbers else "no figures here"
    assert choose_path(q, [P()], tables)[0] == path


def test_plan_parsing_is_strict():
    ok = parse_plan('```json\n[{"step": 1, "tool": "calculator", "input": {"expression": "1 + 2"}}]\n```', 5)
    assert ok[0].input == "1 + 2" and ok[0].tool == "calculator"
    two = parse_plan('[{"step":1,"tool":"sql","input":"SELECT 1 FROM t"},{"step":2,"tool":"calculator",'
                     '"input":"{1} * 2"}]', 5)
    assert two[1].depends_on == (1,)
    for bad, why in [("no list", "not a JSON list"), ('[{"tool": "python", "input": "1"}]', "uses 'python'"),
                     ('[{"tool": "sql", "input": ""}]', "no input"),
                     ('[{"tool": "calculator", "input": "{2} + 1"}, {"tool": "sql", "input": "x"}]', "later step"),
                     (json.dumps([{"tool": "calculator", "input": "1"}] * 6), "at most 5")]:
        with pytest.raises(ToolError, match=why):
            parse_plan(bad, 5)


def test_the_calculator_takes_only_numbers_the_sources_gave():
    from ragclinic.pipeline.reason.plan import Step
    from ragclinic.pipeline.reason.toolbox import Toolbox

    class P:
        n = 1

        class chunk:
            text = "3,120 parcels on Monday and 2,905 on Tuesday"
    box = Toolbox(None, [], [P()], "How many together?", lambda t: None, max_calls=3)
    assert box.run([Step(1, "calculator", "3,120 + 2,905"), Step(2, "calculator", "{1} / 2", (1,))]) is None
    assert [r.output for r in box.records] == ["6,025", "3,012.5"] and box.records[0].cites == (1,)
    failed = box.run([Step(1, "calculator", "3,120 + 3,000")])
    assert failed is not None and "3,000 is in no passage" in failed.error
    limited = box.run([Step(1, "calculator", "1 + 2")])
    assert "at most 3 tool calls" in limited.error and "tools_max_calls" in limited.error


def test_trace_show_prints_the_plan_and_the_tool_calls(tmp_path):
    from typer.testing import CliRunner

    from ragclinic.cli.main import app

    rules = [(r"Plan:$", json.dumps([{"step": 1, "tool": "calculator", "input": "3,120 + 2,905", "depends_on": []}])),
             (r"Tool results", "The warehouse shipped 6,025 parcels on the two days [1].")]
    c, _ = _kb(tmp_path, rules)
    with c:
        a = c.ask("How many parcels were shipped on Monday and Tuesday together?", doctor=False, cache=False)
    out = CliRunner().invoke(app, ["trace", "show", a.trace_id, "--kb", str(tmp_path / "kb")]).output
    assert "plan 1" in out and "calculator(3,120 + 2,905)" in out and "tool calls" in out and "6,025" in out


def test_a_tenant_plan_cannot_read_another_tenants_table(tmp_path):
    from ragclinic.store.tables import list_tables

    docs = tmp_path / "docs"
    for tenant in ("a", "b"):
        (docs / tenant).mkdir(parents=True)
        (docs / tenant / f"sales_{tenant}.csv").write_text(f"product,price,units_q2\nWidget{tenant},10,{5 if tenant == 'a' else 7}\n",
                                                           encoding="utf-8")
    name = {}
    rules = [(r"Plan:$", lambda m: json.dumps([{"step": 1, "tool": "sql", "input": f"SELECT SUM(price * units_q2) FROM {name['b']}"}])),
             (r"corrected plan", lambda m: json.dumps([{"step": 1, "tool": "sql", "input": f"SELECT SUM(price * units_q2) FROM {name['a']}"}])),
             (r"Tool results", "Total Q2 revenue was 50 [1].")]
    c = Clinic.open(tmp_path / "kb", model=ScriptedLanguageModel(["x"], rules=rules, yes_prob=0.9), embedder="fake",
                    judge="llm", cache_dir=tmp_path / "cache")
    with c:
        c.ingest([docs / "a"], tags={"tenant": "a"})
        c.ingest([docs / "b"], tags={"tenant": "b"})
        by_doc = {t["title"]: t["name"] for t in list_tables(c.kb.db.conn)}
        name["a"] = next(v for k, v in by_doc.items() if k.endswith("a"))
        name["b"] = next(v for k, v in by_doc.items() if k.endswith("b"))
        res = c.consult("What was the total revenue in Q2?", doctor=False, cache=False, enforced={"tenant": "a"})
    tools = res.payload["tools"]
    assert tools[0]["error"] and f"no table {name['b']}" in tools[0]["error"]
    assert name["b"] not in tools[0]["error"].split("may query:")[1]  # the other tenant's table is not even listed
    assert tools[1]["error"] is None and "50" in tools[1]["output"] and "50" in res.payload["answer"]
    assert all("sales_b" not in x["path"] for x in res.payload["citations"])


def test_the_ui_trace_page_shows_the_plan_and_the_tool_calls(tmp_path):
    from fastapi.testclient import TestClient

    from ragclinic.config import Settings
    from ragclinic.server.app import create_app
    from ragclinic.server.auth import Keys

    rules = [(r"Plan:$", json.dumps([{"step": 1, "tool": "calculator", "input": "3,120 + 2,905", "depends_on": []}])),
             (r"Tool results", "The warehouse shipped 6,025 parcels on the two days [1].")]
    c, lm = _kb(tmp_path, rules)
    with c:
        a = c.ask("How many parcels were shipped on Monday and Tuesday together?", doctor=False, cache=False)
    app = create_app(Settings.load(tmp_path / "kb", embedder="fake", judge="llm", cache_dir=tmp_path / "cache",
                                   allowed_hosts=["testserver"]), Keys(["admin-key-123"]), model=lm)
    with TestClient(app) as client:
        client.get("/?api_key=admin-key-123", follow_redirects=False)  # logs in (a session cookie)
        page = client.get(f"/traces/{a.trace_id}").text
    assert "The plan and its tool calls" in page and "calculator(3,120 + 2,905)" in page and "6,025" in page


@pytest.mark.parametrize("q, text, path", [
    # a count the passage states with a total word beside it: read, not computed (issue 52)
    ("Altogether, how many member levels does the loyalty programme have?",
     "The loyalty programme has 6 member levels altogether, from 200 to 9,000 points.", "direct"),
    ("How many stations does the tram network have in total?",
     "The tram network has a total of 41 stations, 7 of them underground.", "direct"),
    ("公司一共有几家门店？", "公司目前共有38家门店，其中12家位于北京，9家位于上海。", "direct"),
    ("这套系统总共支持多少种语言？", "该系统总共支持14种语言，默认语言为英语，另有3种正在测试。", "direct"),
    # pieces to add up: still computed
    ("How many stations do lines 1 and 2 have in total?", "Line 1 has 18 stations and line 2 has 23 stations.", "tools"),
    ("两个仓库一共有多少名员工？", "北仓库有员工120名，南仓库有员工85名，两个仓库共有叉车30台。", "tools"),
    # a stated total of another thing does not count
    ("How many employees do the two shops have in total?", "The two shops have 9 tills in total; one has 14 staff "
     "and the other 11.", "tools"),
])
def test_a_stated_count_is_read_not_computed(q, text, path):
    class P:
        class chunk:
            pass
    P.chunk.text = text
    assert choose_path(q, [P()], [])[0] == path
