"""Issue 52: a how-to answer that copies the wrong sentence of the right passage is replaced by the passage's
sentence that addresses the question; an answer that shares a word with the question, and a one-fact answer,
are left as they are."""

from __future__ import annotations

import json

from helpers import build_kb, passage
from helpers import claim as _claim
from ragclinic.models.fake_llm import ScriptedLanguageModel
from ragclinic.pipeline.generate.on_question import off_question
from ragclinic.pipeline.runner import Pipeline

SUDO = ("这句话出自一本很旧的 Unix 手册。如今只要在 /etc/sudoers 中加入 “%admin ALL=/sbin/reboot” 这一行，"
        "就能只让 admin 组的成员重启服务器。")
ARCHIVE = ("That rule dates from the days of tape drives. Today, run chgrp backup on the archive folder and chmod 0640 "
           "on the archives, so only the backup group can read them.")


def _p(n: int, text: str):
    return passage(n, text, "zh")


def test_the_sentence_that_addresses_the_question_replaces_an_answer_that_shares_no_word_with_it():
    ps = [_p(1, SUDO), _p(2, "关机命令 shutdown -h now 会立即关闭系统。")]
    q = "只想让管理员组的人能重启服务器，别人都不行，该怎么配置？"
    sentence, n = off_question(q, [_claim("这句话出自一本很旧的 Unix 手册", 1)], ps)
    assert n == 1 and "/etc/sudoers" in sentence
    # an answer that shares a word with the question stands; so does one whose cited passages say nothing of it
    assert off_question(q, [_claim("在 /etc/sudoers 中加入一行，只让 admin 组重启服务器", 1)], ps) is None
    assert off_question(q, [_claim("这句话出自一本很旧的 Unix 手册", 2)], ps) is None
    en = [_p(1, ARCHIVE)]
    sentence, _ = off_question("I want only the backup group to read the archives. How do I set that up?",
                               [_claim("That rule dates from the days of tape drives", 1)], en)
    assert sentence.startswith("Today, run chgrp backup")


def test_the_pipeline_answers_a_how_to_question_with_the_sentence_that_addresses_it(tmp_path):
    kb = build_kb(tmp_path, {"sudo.md": "# sudo\n\n" + SUDO + "\n"})
    reply = json.dumps({"status": "answered", "points": [{"text": "这句话出自一本很旧的 Unix 手册", "evidence": [1]}]},
                       ensure_ascii=False)
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "只想让管理员组的人能重启服务器，别人都不行，该怎么配置？")
    a = state.answer
    assert a.route == "answer" and "/etc/sudoers" in a.text and "Unix 手册" not in a.text, a
    assert any(f.startswith("off_question:") for f in a.flags)
    kb.close()


def test_a_one_fact_answer_is_not_touched(tmp_path):
    kb = build_kb(tmp_path, {"wifi.md": "# Wi-Fi\n\nThe router's WPA2 passphrase must be between 8 and 63 characters "
                                        "long; spaces are allowed.\n"})
    reply = json.dumps({"status": "answered", "answer": "8 and 63 characters", "evidence": [1]})
    state, _ = Pipeline(kb, lm=ScriptedLanguageModel([reply], yes_prob=0.9)).ask(
        "how long does a wifi password have to be on these routers?")
    assert "8 and 63 characters" in state.answer.text and not any(f.startswith("off_question")
                                                                 for f in state.answer.flags)
    kb.close()
