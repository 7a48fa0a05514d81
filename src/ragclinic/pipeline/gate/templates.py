"""Fixed wording for refusals, clarifications and the notes shown beside an answer, in the question's language."""

from __future__ import annotations

from ragclinic.text.lang import language_of

_TEXT = {
    "en": {
        "no_evidence": "I can't answer this from the documents: they do not contain the answer, and I won't guess.",
        "no_hits": "I can't answer this: nothing in the knowledge base (within the requested scope) matches the "
                   "question.",
        "one_side": "I can't make this comparison from the documents: I found evidence about {found} but not "
                    "about {missing}.",
        "clarify": "The question has no terms I can search for: could you say more precisely what you are "
                   "asking about?",
        "false_premise": "The documents contradict the premise of the question.",
        "refined": "The documents do not say more than this: {k} statement(s) the sources could not confirm were "
                   "left out.",
        # notes: shown beside the answer (Answer.notes), never appended to its text
        "incomplete": "The documents do not confirm every part of this answer; it may be incomplete.",
        "global_partial": "This question is about the whole collection, and the passages searched are a few of "
                          "them only; {fix}.",
        "fix_no_graph": "build the knowledge graph to answer it from the whole collection: "
                        "ragclinic ingest DOCS --kb DIR --graph",
        "fix_no_match": "no community of the knowledge graph matched the question; ask with the words the "
                        "documents use, or raise graph_communities_k",
        "quarantined": "{k} retrieved passage(s) were set aside because they contained instructions to the "
                       "assistant ({titles}).",
        "prefer": "[{n}] is the {why} source.",
        "injected": "A passage this answer rests on contains instructions to the assistant ({titles}); treat the "
                    "answer with care.",
        "instructions_removed": "Instructions addressed to the assistant were found in {places}; they were removed "
                                "before answering and the rest of the text was used.",
        "hidden_instructions": "{titles} holds instructions to the assistant in text a reader cannot see; that text "
                               "was left out when the document was read.",
        "from_output": "This answer is read off program output printed in {titles} (a command's output or a log "
                       "from one run), not from the text that explains it; check it before relying on it.",
    },
    "zh": {
        "no_evidence": "无法根据文档回答这个问题：文档中没有找到答案，我不会猜测。",
        "no_hits": "无法回答：知识库（在所请求的范围内）中没有与该问题相关的内容。",
        "one_side": "无法根据文档进行这一比较：找到了关于{found}的证据，但没有关于{missing}的证据。",
        "clarify": "这个问题中没有可以检索的关键词：能否更具体地说明您想问的内容？",
        "false_premise": "文档内容与问题的前提相矛盾。",
        "refined": "文档中没有提到更多内容：有{k}处无法由文档证实的说法已删去。",
        "incomplete": "文档没有证实这个回答的每一部分，回答可能不完整。",
        "global_partial": "这个问题涉及整个文档集，而检索到的只是其中少数段落；{fix}。",
        "fix_no_graph": "如需依据整个文档集回答，请构建知识图谱：ragclinic ingest DOCS --kb DIR --graph",
        "fix_no_match": "知识图谱中没有与问题相符的社区；请使用文档中的用词提问，或调高 graph_communities_k",
        "quarantined": "有{k}个检索到的段落因包含针对助手的指令而被排除（{titles}）。",
        "prefer": "[{n}]是{why}的来源。",
        "injected": "这个回答所依据的段落中含有针对助手的指令（{titles}），请谨慎对待。",
        "instructions_removed": "{places}中含有针对助手的指令，已在回答前删去，其余内容照常使用。",
        "hidden_instructions": "《{titles}》中有读者看不到的、针对助手的指令，读取文档时已将其略去。",
        "from_output": "这个回答取自《{titles}》中印出的程序输出（某次运行的命令输出或日志），而不是说明文字；使用前请核实。",
    },
}


def render(key: str, question: str, **values: str) -> str:
    return _TEXT[language_of(question)][key].format(**values)


def wordings(keys) -> list[str]:
    """Every language's text of each template in ``keys``, {placeholders} unfilled (eval's answer-form check
    exempts them)."""
    return [lang[key] for lang in _TEXT.values() for key in keys]
