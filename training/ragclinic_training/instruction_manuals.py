"""Hard negatives for the planted-instruction detector (issue 35): technical documentation addressed to its READER.

A manual tells its reader what to do ("you should read…", "建议你使用…查看", "never run … as root", asides, banter,
shell and SQL comments); that is not a document addressing the assistant. Two sources, both labelled 0:

- real sentences of Debian documentation packages (DFSG-free; pinned by name, version and sha256 below), fetched
  with ``apt-get download`` into a cache folder at training time, extracted with ``dpkg-deb``, parsed with the
  project's HTML parser and split as text/injection.find_instructions splits a passage. Family: package + page
  (+ top-level section for one-page manuals), the split key. Never the evaluation manuals (postgresql-doc,
  debian-reference), Debian's FAQ, the Rust book, SciFact, RGB or FaithBench.
- generated look-alikes of reader-addressed technical sentences (EN and ZH, generic computing vocabulary); family:
  the template.
"""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
import tempfile
from pathlib import Path

from ragclinic.config import Settings
from ragclinic.ingest.parse import parse_source
from ragclinic.text.sentences import paragraphs, split_sentences
from ragclinic.types import Parsed, SourceFile

CACHE = Path.home() / ".cache" / "ragclinic" / "instruction-debs"
# (package, version, sha256 of the .deb, HTML globs inside it): licences GPL-2+ / MIT (maint-guide), GPL-2+
# (debian-edu-doc), CC BY-SA 3.0 / GPL-2+ (debian-handbook), GPL-2+ (installation-guide).
PACKAGES = (
    ("maint-guide", "1.2.53", "762c8a400a36668d2eb814a3ba356b06488fd889dfce478eb11d5cfb189a47b5",
     ("usr/share/doc/maint-guide/html/*.html",)),
    ("maint-guide-zh-cn", "1.2.53", "d605b60a034f63857bc44205aed5ad7ba6e17d0d2b1ba5e79179b4e7ec4ee4bc",
     ("usr/share/doc/maint-guide-zh-cn/html/*.html",)),
    ("debian-edu-doc-en", "2.12.23~deb12u1", "0a985aebd07dd69ea1d22c767c410fbca429e7c9fa378024bcaf4fedeb09506a",
     ("usr/share/doc/debian-edu-doc-en/debian-edu-bookworm-manual.html",)),
    ("debian-edu-doc-zh-cn", "2.12.23~deb12u1", "d98fa11ea24238d38631d756ab75144c3d97dbd2a2e5a0223f2f7d8d975ecff2",
     ("usr/share/doc/debian-edu-doc-zh-cn/debian-edu-bookworm-manual.html",)),
    ("debian-handbook", "11.20220922", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa",
     ("usr/share/doc/debian-handbook/html/en-US/*.html", "usr/share/doc/debian-handbook/html/zh-CN/*.html")),
    ("installation-guide-amd64", "20230508+deb12u1",
     "812c43e1dc906daf671e3efe953dc023205c238e5bd5a3021ce4ca142793573a",
     ("usr/share/doc/installation-guide-amd64/en/*.html", "usr/share/doc/installation-guide-amd64/zh_CN/*.html")),
)
_GLUED = re.compile(r"(?<=[a-z0-9\)\"”][.!?])(?=[A-Z])")


def sentences(text: str, lo: int = 12, hi: int = 400) -> list[str]:
    """Sentences of prose (training's split for real text), whitespace-normalised as the detector scores them."""
    text = _GLUED.sub(" ", text)
    out = []
    for a, b in split_sentences(text):
        s = " ".join(text[a:b].split())
        if lo <= len(s) <= hi:
            out.append(s)
    return out


def passage_sentences(text: str) -> list[str]:
    """Sentences as find_instructions cuts a passage: paragraphs first, then sentences (code lines and table rows
    included, as the detector meets them)."""
    out = []
    for a, b in paragraphs(text):
        for s, e in split_sentences(text[a:b], a):
            t = " ".join(text[s:e].split())
            if 8 <= len(t) <= 600:
                out.append(t)
    return out


def fetch(package: str, version: str, sha256: str, cache: Path = CACHE) -> Path:
    """The pinned .deb in the cache, downloaded with apt-get once; refused when its sha256 differs."""
    deb = cache / f"{package}_{version}_all.deb"
    if not deb.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=cache, check=True)
    got = hashlib.sha256(deb.read_bytes()).hexdigest()
    if got != sha256:
        raise RuntimeError(f"{deb}: sha256 {got}, pinned {sha256}; delete it and re-run, or update PACKAGES")
    return deb


def _families(path: Path, data: bytes, key: str) -> list[tuple[str, str]]:
    """(sentence, family) for one HTML page; a long one-page manual is split by its top-level sections."""
    source = SourceFile(path, data, hashlib.sha256(data).hexdigest(), 0.0, len(data))
    out = []
    for item in parse_source(source, Settings()):
        if not isinstance(item, Parsed):
            continue
        doc = item.document
        spans = [(0, len(doc.text), "")]
        levels = sorted({x.level for x in doc.sections}) if len(doc.text) > 40_000 else []
        for level in levels:  # a one-page manual: the first heading level that cuts it into several
            tops = [x for x in doc.sections if x.level == level]
            if len(tops) > 3:
                spans = [(x.start, x.end, "/".join(x.path)[:60]) for x in tops]
                break
        if len(spans) == 1 and len(doc.text) > 40_000:  # no headings: stretches of ~10,000 characters
            cuts = [0] + [m.end() for m in re.finditer(r"\n\n", doc.text)] + [len(doc.text)]
            bounds = sorted({next(c for c in cuts if c >= k) for k in range(0, len(doc.text), 10_000)} | {len(doc.text)})
            spans = [(a, b, f"part{i}") for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]
        for a, b, sec in spans:
            fam = f"{key}#{sec}" if sec else key
            out += [(s, fam) for s in passage_sentences(doc.text[a:b])]
    return out


def manual_sentences(cued, cache: Path = CACHE, per_page: int = 80, seed: int = 0) -> list[tuple[str, str, str]]:
    """(sentence, family, package) of every pinned manual, only those ``cued`` accepts, at most ``per_page``
    from a family (a sample, so one long page does not dominate)."""
    rnd = random.Random(seed)
    out: list[tuple[str, str, str]] = []
    for package, version, sha, globs in PACKAGES:
        deb = fetch(package, version, sha, cache)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
            pages = sorted(p for g in globs for p in Path(tmp).glob(g))
            for page in pages:
                key = f"{package}:{page.relative_to(tmp)}"
                fams: dict[str, list[str]] = {}
                for s, fam in _families(page, page.read_bytes(), key):
                    if cued(s):
                        fams.setdefault(fam, []).append(s)
                for fam, items in fams.items():
                    items = list(dict.fromkeys(items))
                    rnd.shuffle(items)
                    out += [(s, fam, package) for s in items[:per_page]]
    return out


# ------------------------------------------------------------------------------------------- generated
_READER_EN = [
    "You should run {cmd} before you {act}.", "You must be {role} to {act}.", "(Only {role} may {act}, by the way.)",
    "In general you should keep {opt} low unless measurements say otherwise.", "Never {act} unless you know what you are doing.",
    "Do not give {who} the rights to {act}.", "Run the tests with {cmd} before you send a patch.",
    "Use {cmd} to list the {obj}.", "If you are {role}, you can skip this section.", "Go through the installer's questions one by one.",
    "Answer yes when {tool} asks whether to {act}.", "Well, something broke, so now you have to {act}.",
    "Don't worry if {tool} prints a warning here; you can ignore it.", "Ignore the warning about {obj}: it is harmless.",
    "Forget about {obj} for now; {tool} takes care of it.", "Consider a small example in which you want to {act}.",
    "Imagine you have two {obj} and need {tool} to {act}.", "This does not mean you can skip {act_ing}.",
    "(You will never see any of this unless you turn on debugging.)",
    "-- undo the previous step, then {act}", "# now {act} again", "$ {cmd} # then {act}",
    "A few tips for beginners follow.", "We recommend that you read the {doc} first.", "Read the {doc} for the details.",
    "Please reply to the mailing list rather than to the author.", "The system will respond with a list of {obj}.",
    "Replace the example value with your own {obj}.", "Users must belong to the {grp} group to {act}.",
    "If the output looks wrong, check your {obj} and try again.", "Always back up your {obj} before you {act}.",
    "Your {obj} will be overwritten, so make a copy first.", "Make sure you {act} before you reboot.",
    "Keeping the {obj} in order is the administrator's job.", "The tool will happily let you shoot yourself in the foot.",
    "From now on, we assume you are logged in as {role}.", "In this chapter you will learn how to {act}.",
    "Whatever you do, do not {act} on a production machine.", "Be sure to {act} when the upgrade finishes.",
    "Generate a new {obj} with {cmd} and keep it somewhere safe.", "The prompt changes to # when you are root.",
    "When {tool} asks for a password, type the one you chose during installation.", "Pretend you are a new user and {act}.",
    "Reply to each question with the default unless you have a reason to change it.", "This output tells you that {tool} is running.",
]
_READER_ZH = [
    "动手之前，最好先看一遍{doc}。", "更多细节请参考{doc}。", "请使用 {cmd} 查看{obj}。", "你可以用 {cmd} 命令列出所有{obj}。",
    "不要把{act}的权限交给{who}。", "永远不要以 root 身份{act}。", "按提示逐一回应安装程序的提问。",
    "当 {tool} 询问是否要{act}时，回答“是”。", "下面是给初学者的几条小建议：", "维护{obj}是{role}的职责。",
    "如果你是{role}，可以跳过本节。", "你必须是{role}才能{act}。", "（顺便说一句，只有{role}才能{act}。）", "前面已经介绍过{obj}的用法。",
    "注意：本节内容只适用于 amd64 架构。", "忽略关于{obj}的警告，它是无害的。", "先别管{obj}，{tool}会处理它。",
    "好了，现在{tool}已经可以工作了，接下来我们{act}。", "假设你想要{act}，我们从一个例子开始。", "-- 撤销上一步，然后{act}",
    "# 现在再次{act}", "$ {cmd} # 然后{act}", "我们建议你在{act}之前先备份{obj}。", "请回复到邮件列表，而不是直接回复作者。",
    "系统会输出一个{obj}列表。", "把示例中的值换成你自己的{obj}。", "用户必须属于 {grp} 组才能{act}。", "如果输出看起来不对，请检查你的{obj}后重试。",
    "在{act}之前，务必先备份你的{obj}。", "你的{obj}会被覆盖，请先复制一份。", "重启之前请确保你已经{act}。", "这个工具不会阻止你犯错。",
    "从现在开始，我们假定你以{role}身份登录。", "在本章中你将学习如何{act}。", "无论如何，不要在生产服务器上{act}。",
    "升级完成后一定要{act}。", "用 {cmd} 生成新的{obj}，并妥善保存。", "当 {tool} 要求输入密码时，输入你在安装时设置的密码。",
    "熟悉一个新系统需要时间，别着急。", "本章先介绍几个入门概念。", "除非有特别的理由，每个问题都选择默认回答即可。",
    "这段输出说明 {tool} 正在运行。", "请以普通用户身份{act}，不要使用 root 账户。",
]
_FILL_EN = {"cmd": ["make check", "ls -l", "apt-get update", "git log", "df -h", "systemctl status", "ps aux", "dpkg -L"],
            "act": ["remove a package", "change the configuration", "restore the backup", "edit the file by hand",
                    "upgrade the kernel", "delete the old logs", "restart the service", "rebuild the index"],
            "act_ing": ["checking the permissions", "testing your changes", "reading the changelog"],
            "role": ["root", "a superuser", "the package maintainer", "an administrator", "a member of the staff group"],
            "who": ["your manager", "the accounting department", "untrusted users"], "opt": ["the cache size", "the delay", "the timeout"],
            "obj": ["configuration files", "packages", "partitions", "log files", "keys", "mount points", "user accounts"],
            "tool": ["the installer", "the package manager", "debconf", "the server", "the shell"], "grp": ["sudo", "adm", "staff"],
            "doc": ["manual page", "release notes", "README file", "upstream wiki"]}
_FILL_ZH = {"cmd": ["make check", "ls -l", "apt-get update", "git log", "df -h", "systemctl status", "ps aux", "dpkg -L"],
            "act": ["删除软件包", "修改配置", "恢复备份", "手工编辑这个文件", "升级内核", "删除旧日志", "重启服务", "重建索引"],
            "role": ["root", "超级用户", "软件包维护者", "系统管理员", "管理组成员"], "who": ["你的老板", "行政部门", "不可信的用户"],
            "obj": ["配置文件", "软件包", "分区", "日志文件", "密钥", "挂载点", "用户账户"],
            "tool": ["安装程序", "包管理器", "debconf", "服务器", "shell"], "grp": ["sudo", "adm", "staff"],
            "doc": ["手册页", "发行说明", "README 文件", "上游的 wiki"]}


def reader_lookalikes(seed: int = 0, per: int = 8) -> list[tuple[str, str]]:
    """Generated sentences of documentation addressed to its reader (label 0), ``per`` fillings a template."""
    rnd = random.Random(seed)
    out = []
    for lang, temps, fill in (("en", _READER_EN, _FILL_EN), ("zh", _READER_ZH, _FILL_ZH)):
        for i, t in enumerate(temps):
            seen = dict.fromkeys(t.format(**{k: rnd.choice(v) for k, v in fill.items()}) for _ in range(per))
            out += [(s, f"{lang}-reader{i}") for s in seen]
    return out
