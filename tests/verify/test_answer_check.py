"""Answer-then-verify: the answer part of a claim must be in the passage, and the passage about what was asked."""

from ragclinic.verify.answer_check import answer_part, backing


def test_the_answer_part_is_what_the_claim_adds():
    terms, nums = answer_part("2018年中国城镇新增就业了多少人", "2018年中国城镇新增就业1361万人。")
    assert "1361" in nums and "2018" not in nums and not terms & {"城镇", "就业"}


def test_backed_when_the_passage_has_the_answer_about_the_year_asked():
    b = backing("2018年中国城镇新增就业了多少人", "2018年中国城镇新增就业人数为1361万人。",
                "国家统计局介绍，2018年，我国城镇新增就业1361万人，比上年多增10万人。")
    assert b.backed, b.reason


def test_not_backed_by_a_passage_about_another_event():
    b = backing("香港第六届立法会选举有多少个议席？", "香港第六届立法会选举共有90个议席。",
                "香港特别行政区第六任行政长官选举 ... 立法会选举90个议席个个有竞争。")
    assert not b.backed and "第六届" in b.reason
    b = backing("Who won the 2022 Nobel Prize in Literature?", "The 2022 prize went to Abdulrazak Gurnah.",
                "The 2021 Nobel Prize in Literature was awarded to Abdulrazak Gurnah.")
    assert not b.backed and "2021" in b.reason and "2022" in b.reason


def test_not_backed_when_the_number_or_name_is_missing():
    assert not backing("How tall is the tower?", "It is 330 metres tall.", "The tower is 300 metres tall.").backed
    assert not backing("Who founded the firm?", "Ada Lovelace founded it.", "The firm was founded in 1901.").backed
    assert not backing("Who founded the firm?", "Who founded the firm?", "The firm was founded by Ada.").backed


def test_a_quoted_pattern_is_met_by_its_literal_parts_a_quoted_title_only_as_written():
    q = "局域网里想直接用“机器名.local”互相访问，不搭域名服务器，要装哪个东西？"
    passage = "libnss-mdns 插件包提供 mDNS 的主机名解析。\".local\"结尾的主机名，使用组播 DNS 解析。"
    assert backing(q, "libnss-mdns", passage).backed
    assert not backing(q, "libnss-mdns", "libnss-mdns 插件包提供主机名解析。").backed  # no ".local" at all
    title = backing("《小时代》的导演是谁？", "郭敬明", "郭敬明执导了电影《爵迹》。")
    assert not title.backed and "小时代" in title.reason
    english = backing('Which package resolves "my-box.local" names?', "libnss-mdns", "libnss-mdns resolves .local names.")
    assert not english.backed  # a Latin quote is exact
