from ragclinic.text.analyzer import analyze
from ragclinic.text.lang import detect_language


def test_english_is_lowercased_stemmed_and_stopworded():
    assert analyze("The Retrieval of Documents") == ["retriev", "document"]
    assert analyze("retrieving", stem=False) == ["retrieving"]


def test_chinese_is_segmented_with_jieba_search_mode():
    toks = analyze("检索增强生成")
    assert "检索" in toks and "生成" in toks


def test_mixed_text_keeps_both_scripts_and_numbers():
    toks = analyze("RAG 检索 2024 risk-free")
    assert toks == ["rag", "检索", "2024", "risk", "free"]


def test_language_detection():
    assert detect_language("This is English.") == "en"
    assert detect_language("这是中文，有一些 English words。") == "zh"
    assert detect_language("1234 ...") == "und"


def test_other_scripts_and_full_width_forms_are_searchable():
    assert analyze("Это русский текст") == ["это", "русский", "текст"]
    assert analyze("한국어 텍스트") == ["한국어", "텍스트"]
    assert analyze("ＧＰＴ－４ 模型") == ["gpt", "4", "模型"]
