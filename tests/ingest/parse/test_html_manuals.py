"""Pages of generated manuals (DocBook: the PostgreSQL manual, Debian Reference): headings wrapped in nested
<div>s, a table of contents and navigation bars, <pre> blocks whose lines start with '#', definition lists
(issue 35). trafilatura dropped every such heading; the page must keep its sections, code and definitions."""

from __future__ import annotations

from .helpers import assert_spans_valid, parse_one

PROSE = ("The kernel keeps the host name of the system. It is stored in the file /etc/hostname, which holds the "
         "host name only and not the fully qualified domain name. ")
PAGE = f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Chapter 3. Initialization</title>
<meta name="generator" content="DocBook XSL Stylesheets V1.79.2"></head><body>
<div class="navheader"><table><tr><td><a href="ch02.html">Prev</a></td><td><a href="ch04.html">Next</a></td></tr>
</table></div>
<div class="chapter"><div class="titlepage"><div><div><h1 class="title"><a id="init"></a>Chapter 3. Initialization</h1>
</div></div></div>
<div class="toc"><dl><dt><a href="#host">3.1. The host name</a></dt><dt><a href="#msg">3.2. Kernel messages</a></dt>
</dl></div>
<div class="section"><div class="titlepage"><div><div><h2 class="title"><a id="host"></a>3.1. The host name</h2>
</div></div></div><p>{PROSE * 3}</p></div>
<div class="section"><div class="titlepage"><div><div><h2 class="title"><a id="msg"></a>3.2. Kernel messages</h2>
</div></div></div><p>The level of kernel messages shown on the console can be set with a threshold.</p>
<pre class="screen"># dmesg -n3
# dmesg -n7</pre>
<div class="variablelist"><dl><dt><span class="term"><code>-s</code><br><code>--schema-only</code></span></dt>
<dd><p>Dump only the object definitions (schema), not data.</p><p>This option is the inverse of
<code>--data-only</code>.</p></dd></dl></div>
<p>{PROSE}</p></div></div>
<div class="navfooter"><a href="ch02.html">Prev</a> <a href="index.html">Home</a></div></body></html>"""


def test_a_generated_manual_keeps_its_headings_code_and_definitions(tmp_path):
    path = tmp_path / "ch03.html"
    path.write_text(PAGE, encoding="utf-8")
    doc = parse_one(path).document
    assert_spans_valid(doc)
    paths = {s.path[-1] for s in doc.sections}
    assert {"3.1. The host name", "3.2. Kernel messages"} <= paths, paths
    assert not any("dmesg" in p for p in paths), "a '# command' line of a <pre> block read as a heading"
    assert "# dmesg -n3\n# dmesg -n7" in doc.text  # the code block whole, its lines as they were
    definition = doc.text.index("Dump only the object definitions")
    assert doc.text[:definition].count("```") % 2 == 0, "a definition's paragraph rendered as code"
    assert "--schema-only" in doc.text[:definition]
    assert "Prev" not in doc.text and "Home" not in doc.text, "navigation bars are boilerplate"
    assert doc.text.count("3.1. The host name") == 1, "the table of contents is boilerplate"


BLOG = f"""<!DOCTYPE html><html><head><title>Why foxes jump</title></head><body>
<div class="site-title">My Fox Blog</div><div class="menu"><a href="/">Home</a> <a href="/about">About</a></div>
<div class="content"><article><h1>Why foxes jump</h1><p>{PROSE * 2}</p><h2>The real reason</h2><p>{PROSE * 2}</p>
</article><div class="comments"><h3>3 Comments</h3><p>Great post!</p></div></div>
<div class="widgets"><h3>Recent Posts</h3><ul><li>Foxes at night</li><li>Badgers</li></ul><h4>Archives</h4>
<ul><li>May 2024</li></ul></div><p>Powered by WordPress</p></body></html>"""


def test_an_ordinary_web_page_keeps_trafilaturas_clean_extraction(tmp_path):
    """Headings trafilatura drops with the boilerplate it finds itself ("Recent Posts") are no reason to convert
    the whole page: its article's headings were kept."""
    path = tmp_path / "post.html"
    path.write_text(BLOG, encoding="utf-8")
    doc = parse_one(path).document
    assert "The real reason" in {s.path[-1] for s in doc.sections}
    assert "Powered by WordPress" not in doc.text and "Recent Posts" not in doc.text and "About" not in doc.text


def test_the_whole_page_conversion_keeps_angle_brackets_and_hash_signs_as_text(tmp_path):
    page = PAGE.replace(f"<p>{PROSE}</p></div></div>", "<p>Write the address as &lt;hostname&gt;:&lt;port&gt; in the "
                        "file.</p><p># is the comment character in pg_hba.conf files.</p></div></div>")
    path = tmp_path / "ch03.html"
    path.write_text(page, encoding="utf-8")
    doc = parse_one(path).document
    assert "Write the address as <hostname>:<port> in the file." in doc.text
    assert "# is the comment character" in doc.text
    assert not any("comment character" in p for s in doc.sections for p in s.path)
