

def test_a_changed_digit_is_a_changed_number():
    from ragclinic.pipeline.scope.conflicts import _swapped_span

    q = "香港第六届立法会选举有多少个议席？"
    assert _swapped_span("第六届立法会共有70个议席，经2016年9月4日的选举产生。",
                         "第六届立法会共有170个议席，经2016年9月4日的选举产生。", q) == ("70", "170")
    assert _swapped_span("中国2019年人口出生率为10.48‰，比上年下降。", "中国2019年人口出生率为10.94‰，比上年下降。",
                         "2019年出生率是多少") == ("10.48", "10.94")


def test_the_verifier_marks_a_conflict_only_between_answers_to_the_same_question():
    from ragclinic.pipeline.scope.conflicts import _verified_conflict
    from ragclinic.verify import create_verifier

    v = create_verifier("learned")
    q = "Who won the 2021 Nobel Prize in Literature?"
    sa = "The 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah."
    sb = "The 2021 Nobel Prize in Literature went to Annie Ernaux of France, the committee said."
    kind, (xa, xb) = _verified_conflict(v, q, sa, sb, sb)
    assert kind == "entity" and "gurnah" in xa and "ernaux" in xb
    # another year is not a conflict (the question's constraint), nor is the same answer
    assert _verified_conflict(v, q, sa, sb.replace("2021", "2022"), sb.replace("2021", "2022")) is None
    assert _verified_conflict(v, q, sa, sa, sa) is None
