"""The demo corpus: a few English and Chinese documents in every supported format, written here.

The documents carry what real corpora get wrong — a two-column PDF with words hyphenated across
line breaks (one a real compound, "risk-free"), ruled tables, a web page buried in navigation
noise, GBK-encoded Chinese text — so the parse reports show the parse layer at work.
"""

from __future__ import annotations

from pathlib import Path

from ragclinic.demo.writers import PdfPage, write_docx, write_html, write_markdown, write_pdf, write_text

RATES = [["Instrument", "Maturity", "Yield"], ["Treasury bill", "3 months", "4.2%"],
         ["Treasury note", "10 years", "3.9%"], ["Corporate bond", "5 years", "5.6%"]]

_PDF_LEFT = [
    "Retrieval augmented generation answers a question by first searching a knowledge base and then "
    "asking a language model to write an answer grounded in the passages it found.",
    "The quality of the retrieval step bounds the quality of the answer: a passage that is never "
    "retrieved cannot be cited, however capable the generator is.",
    "Parsing is the first place where retrieval breaks. When a parser drops the hyphen in a compound "
    "such as risk-free, every question about risk-free rates stops matching the text.",
]
_PDF_RIGHT = [
    "Chunking decides what a passage is. Chunks that end in the middle of a sentence split the "
    "evidence for one claim across two passages, and neither of them supports it alone.",
    "A self-diagnosing system records a trace for every question, so that when an answer is wrong "
    "the layer that broke can be named: parse, chunk, retrieve, scope, gate or generate.",
    "The table below lists the yields that the worked examples in this handbook refer to.",
]

_ZH_INTRO = ("检索增强生成先在知识库中检索相关段落，再让语言模型依据这些段落作答。"
             "检索质量决定了答案质量的上限：没有被检索到的段落无法被引用。")
_ZH_RISK = ("风险提示：无风险利率通常以国债收益率近似。当解析器丢失了“无风险”一词，"
            "所有关于无风险利率的问题都会检索失败。本文件采用GBK编码保存，用于测试编码识别。")


# The demo's sample questions (`ragclinic demo`, bench/speed_bench.py).
QUESTIONS = ("What is usually used as a proxy for the risk-free rate?", "知识库为每个段落建立了哪些索引？",
             "What is the boiling point of mercury?",  # not in the corpus: it is refused
             "What is duration and what is usually used as a proxy for the risk-free rate?")  # compound: the doctor
                                                                                            # splits it


def write_demo_corpus(folder: Path) -> list[Path]:
    """Write the demo documents under ``folder`` (overwriting earlier copies); returns their paths."""
    en, zh = folder / "en", folder / "zh"
    en.mkdir(parents=True, exist_ok=True)
    zh.mkdir(parents=True, exist_ok=True)
    return [
        write_pdf(en / "rag-handbook.pdf", title="RAG Handbook",
                  pages=[PdfPage(heading="RAG Handbook: where retrieval breaks", columns=[_PDF_LEFT, _PDF_RIGHT]),
                         PdfPage(heading="Reference yields", table=RATES, table_heading="Yields used in examples")],
                  hyphenate=["retrie-val", "risk-free"]),
        write_docx(en / "bond-basics.docx", "Bond basics", [
            ("Risk-free rate", 1, ["The risk-free rate is the return on an investment with no default risk. "
                                   "Short-dated government bills are the usual proxy."]),
            ("How yields are quoted", 2, ["Yields are quoted per year. The table lists reference yields.", RATES]),
            ("Duration", 1, ["Duration measures how much a bond's price moves when rates change by one point."]),
        ]),
        write_html(en / "parser-incident.html", "Incident review: the missing hyphen", [
            ("What happened", ["For three weeks every question about risk-free rates failed. The team tuned "
                               "prompts and swapped models before anyone looked at the parser.",
                               "The PDF parser had joined risk- and free across a line break into riskfree."]),
            ("What we changed", ["Hyphens at line breaks are now kept when the hyphenated form appears "
                                 "elsewhere in the document or is a known compound.",
                                 [["Check", "Before", "After"], ["keyword retention", "71%", "100%"],
                                  ["answer accuracy", "40%", "92%"]]]),
        ]),
        write_markdown(en / "chunking-guide.md", "Chunking guide", [
            ("Sentence boundaries", 1, ["Chunks end at sentence boundaries. The overlap carries the last one or "
                                        "two sentences of the previous chunk into the next one."]),
            ("Sizes", 1, ["Sizes are counted in the embedding model's own tokens.",
                          [["Setting", "Default"], ["chunk_max_tokens", "320"], ["overlap_max_tokens", "96"]]]),
        ]),
        write_markdown(zh / "检索增强生成简介.md", "检索增强生成简介", [
            ("基本原理", 1, [_ZH_INTRO]),
            ("常见故障", 1, ["解析、分块、检索、范围、把关、生成，六层中任何一层出错都会导致错误答案。"
                            "诊断时应逐层排查，而不是只调整提示词。"]),
        ]),
        write_text(zh / "风险提示.txt", _ZH_RISK, encoding="gbk"),
        write_pdf(zh / "知识库手册.pdf", title="知识库手册", chinese=True,
                  paragraphs=["知识库把文档解析为段落，并为每个段落建立词法索引和向量索引。",
                              "每次提问都会记录完整的追踪信息，便于定位出错的层。"]),
    ]
