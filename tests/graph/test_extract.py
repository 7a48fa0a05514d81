"""The fast extractor (graph/extract.py): names, organisations, noun phrases, Chinese POS, merging, relations."""

from __future__ import annotations

from ragclinic.graph.extract import extract_chunks, normalise


def _mentions(text: str, language: str = "en"):
    (g,) = extract_chunks([("c1", "d1", text, language)])
    return g, {m.entity: m for m in g.mentions}


def test_names_organisations_and_acronyms_are_found_sentence_starts_and_months_are_not():
    g, found = _mentions("Halvorsen Marine signed a contract with Nordtek Components in March 2023. Yesterday the "
                         "IL-6 trial at the Bergen Yard was paused. However the NMA approved it.")
    assert {"halvorsen marine", "nordtek components", "il-6", "bergen yard", "nma"} <= set(found)
    assert found["nordtek components"].type == "organisation"
    assert "march" not in found and "yesterday" not in found and "however" not in found


def test_coordinated_names_stay_apart_and_a_verb_ends_a_noun_phrase():
    _, found = _mentions("Nordtek Components and Baltic Steel supply the yard. The corrosion risk had grown.")
    assert {"nordtek components", "baltic steel", "corrosion risk"} <= set(found)
    assert not any("and" in e.split() for e in found)
    assert "had grown" not in found and "risk had" not in found


def test_a_lone_surname_merges_into_the_full_name_of_its_document():
    _, found = _mentions("Ingrid Solberg leads the Bergen Yard. Solberg said the yard was full.")
    assert "solberg" not in found
    (g,) = extract_chunks([("c1", "d1", "Ingrid Solberg leads the Bergen Yard. Solberg said the yard was full.",
                            "en")])
    assert [m.sentence for m in g.mentions if m.entity == "ingrid solberg"] == [0, 1]


def test_co_occurrence_in_one_sentence_is_a_weighted_relation():
    g, _ = _mentions("Nordtek Components ships valves to the Bergen Yard. Nordtek Components invoiced the Bergen "
                     "Yard twice.")
    pair = [r for r in g.relations if {r.source, r.target} == {"nordtek components", "bergen yard"}]
    assert len(pair) == 1 and pair[0].weight == 2.0 and pair[0].type == "co-occurs"
    assert "Nordtek Components ships valves" in pair[0].description


def test_chinese_organisations_people_and_places_by_part_of_speech():
    g, found = _mentions("2023年，华联精密向北京地铁集团供应信号系统部件，陈晓东负责上海项目。", "zh")
    assert found["华联精密"].type == "organisation"
    assert found["北京地铁集团"].type == "organisation"
    assert found["陈晓东"].type == "person"
    assert found["上海"].type == "location"
    assert any({r.source, r.target} == {"华联精密", "陈晓东"} for r in g.relations)


def test_names_merge_by_normalised_form():
    assert normalise("The Bergen Yard") == normalise("bergen  yard") == "bergen yard"
    assert normalise("Nordtek's") == "nordtek"
    assert normalise("supply risks", "phrase") == "supply risk"
    assert normalise("supply risks") == "supply risks"  # a name keeps its plural
    assert normalise("華聯精密") == "华联精密"
