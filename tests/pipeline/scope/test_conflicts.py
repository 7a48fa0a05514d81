

def test_a_changed_digit_is_a_changed_number():
    from ragclinic.pipeline.scope.conflicts import _swapped_span

    q = "香港第六届立法会选举有多少个议席？"
    assert _swapped_span("第六届立法会共有70个议席，经2016年9月4日的选举产生。",
                         "第六届立法会共有170个议席，经2016年9月4日的选举产生。", q) == ("70", "170")
    assert _swapped_span("中国2019年人口出生率为10.48‰，比上年下降。", "中国2019年人口出生率为10.94‰，比上年下降。",
                         "2019年出生率是多少") == ("10.48", "10.94")


def test_the_verifier_marks_a_number_conflict_only_between_answers_to_the_same_question():
    from ragclinic.pipeline.scope.conflicts import _verified_conflict
    from ragclinic.verify import create_verifier

    v = create_verifier("learned")
    q = "How many seats did the 2016 council have?"
    sa = "The 2016 council had 70 seats in total."
    sb = "The 2016 council had 90 seats in total, the register says."
    assert _verified_conflict(v, q, sa, sb, sb) == ("number", ({"70"}, {"90"}))
    # another year is not a conflict (the question's constraint), nor the same answer, nor a question that
    # does not ask for an amount, nor two names (different aspects read as different answers)
    assert _verified_conflict(v, q, sa, sb.replace("2016", "2017"), sb.replace("2016", "2017")) is None
    assert _verified_conflict(v, q, sa, sa, sa) is None
    assert _verified_conflict(v, q, sa, sb, sb, asks_amount=False) is None
    qn = "Who won the 2021 Nobel Prize in Literature?"
    assert _verified_conflict(v, qn, "The 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah.",
                              "The 2021 Nobel Prize in Literature went to Annie Ernaux.",
                              "The 2021 Nobel Prize in Literature went to Annie Ernaux.") is None
