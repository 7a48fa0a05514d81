

def test_a_chinese_question_full_of_latin_identifiers_is_answered_in_chinese():
    """Technical Chinese questions name commands and products in Latin letters: by letters they look English (a
    note in English came back to "CentOS 里 SELinux 一直报 avc denied，该怎么排查？")."""
    from ragclinic.text.lang import language_of

    assert language_of("CentOS 里 SELinux 一直报 avc denied，该怎么排查？") == "zh"
    assert language_of("如何用 pg_dump 备份？") == "zh"
    assert language_of("What does 中国 mean?") == "en"
    assert language_of("apt-cacher-ng") == "en"


def test_identifiers_count_as_one_word_and_japanese_is_not_chinese():
    from ragclinic.text.lang import language_of

    assert language_of("pg_hba.conf 的 md5 和 scram-sha-256 有什么区别？") == "zh"
    assert language_of("怎么用 systemctl enable --now nginx.service 开机启动？") == "zh"
    assert language_of("PostgreSQLのインストール方法は？") == "en"
