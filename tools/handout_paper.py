"""What paper needs that a screen does not: code wrapped by hand with a mark, outputs that fit, maths, an index.

Both printed books pass every chapter's HTML through :func:`for_paper`:

* **Code** (every ``<div class="highlight">`` block: code cells and code in
  markdown) is wrapped here, not by the browser: a line longer than
  :data:`CODE_COLUMNS` breaks after a space or a comma where it can, and goes
  on on the next line, four columns deeper than its statement, behind a
  continuation mark ``↪``. The block itself never wraps (``white-space: pre``),
  so a line the browser would have broken shows up past the margin, where the
  print test finds it.
* **Outputs** whose longest line is wider than :data:`OUTPUT_COLUMNS` are set
  in smaller type, down to :data:`SMALLEST_OUTPUT_PT`, so that a table such as
  ``saved_tensors``' keeps one row to a line.
* **Maths** written as TeX (``$...$``, ``$$...$$``) in markdown becomes MathML,
  which Chromium typesets without a script (:func:`tex_to_mathml` knows the
  commands the course uses, and leaves anything else as it was).
* **The index** of the full handout: each term of :data:`INDEX_TERMS` with the
  pages of the cells that use it (:func:`index_html`).

Widths count a CJK character as two columns (``gradlab.i18n.width``), as a
monospace font draws it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from gradlab.i18n import width

#: Characters of 8.5 pt monospace that fit on a line of a code block in an exercise box (the narrowest place).
CODE_COLUMNS = 82
#: An output wider than this is set smaller (8.5 pt is the book's code size).
OUTPUT_COLUMNS = 92
CODE_PT = 8.5
SMALLEST_OUTPUT_PT = 7.0
MARK = "↪"

_TOKEN = re.compile(r"<[^>]+>|&[#\w]+;|[^<&]", re.S)
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")  # Chinese text breaks between any two characters
_CLOSING = re.compile(r"[，。；：！？、）」』】]")  # ... but never before closing punctuation


def _visible(token: str) -> str:
    if token.startswith("<"):
        return ""
    return html.unescape(token) if token.startswith("&") else token


def _break_at(text: str, columns: int, floor: int) -> int:
    """Where to break ``text`` (an index into it) so that its head fits in ``columns``: after a space or a comma
    when one lies past ``floor``, else after ``. ( [ = /``, else at the width itself."""
    fits = 0
    for at in range(1, len(text) + 1):
        if width(text[:at]) > columns:
            break
        fits = at
    for marks in (" ,", ".([=/"):
        for at in range(fits, floor, -1):
            after_cjk = (
                marks == " ,"
                and _CJK.match(text[at - 1])
                and text[at - 1] not in "（「『【"
                and not _CLOSING.match(text[at : at + 1])
            )
            if (text[at - 1] in marks or after_cjk) and text[at : at + 1] not in ("", " "):
                return at
    return max(fits, floor + 1)


def wrap_line(tokens: list[str], columns: int) -> list[list[str]]:
    """One line of highlighted code (tokens: tags, entities, characters) as printed lines of at most ``columns``.

    A continuation starts four columns deeper than the line's own indentation, behind :data:`MARK`.
    """
    text = "".join(_visible(t) for t in tokens)
    if width(text) <= columns:
        return [tokens]
    indent = len(text) - len(text.lstrip(" "))
    lead = " " * (indent + 2)
    lines: list[list[str]] = []
    rest, room, floor = tokens, columns, indent + 8
    while True:
        shown = "".join(_visible(t) for t in rest)
        if width(shown) <= room:
            lines.append(rest)
            return lines
        cut = _break_at(shown, room, min(floor, len(shown) - 1))
        head, seen = [], 0
        for at, token in enumerate(rest):
            if seen >= cut and _visible(token):
                rest = rest[at:]
                break
            head.append(token)
            seen += len(_visible(token))
        else:
            rest = []
        while rest and _visible(rest[0]) == " ":  # the break's own space ends the line above
            rest = rest[1:]
        lines.append(head)
        if not rest:
            return lines
        rest = [lead, f'<span class="handout-cont">{MARK}</span>', " ", *rest]
        room, floor = columns, indent + 4


def wrap_code(inner: str, columns: int = CODE_COLUMNS) -> str:
    """The inner HTML of a highlighted ``<pre>``, every line at most ``columns`` wide (see :func:`wrap_line`)."""
    lines: list[list[str]] = [[]]
    for token in _TOKEN.findall(inner):
        if token == "\n":
            lines.append([])
        else:
            lines[-1].append(token)
    return "\n".join("".join(part) for line in lines for part in wrap_line(line, columns))


_HIGHLIGHT = re.compile(r'(<div class="highlight[^"]*">\s*<pre[^>]*>)(.*?)(</pre>)', re.S)
_OUTPUT_PRE = re.compile(r'(<div class="jp-RenderedText[^"]*"[^>]*>\s*<pre)([^>]*>)(.*?)(</pre>)', re.S)


def fit_outputs(page: str, columns: int = OUTPUT_COLUMNS) -> str:
    """Text outputs wider than ``columns`` set in smaller type (not below :data:`SMALLEST_OUTPUT_PT`)."""

    def fit(match: re.Match[str]) -> str:
        start, rest, inner, end = match.groups()
        text = html.unescape(re.sub(r"<[^>]+>", "", inner))
        widest = max((width(line) for line in text.splitlines()), default=0)
        if widest <= columns:
            return match.group(0)
        size = max(SMALLEST_OUTPUT_PT, CODE_PT * columns / widest)
        return f'{start} style="font-size: {size:.2f}pt"{rest}{inner}{end}'

    return _OUTPUT_PRE.sub(fit, page)


# ---------------------------------------------------------------- maths


_SYMBOLS = {
    r"\sigma": ("mi", "σ"),
    r"\delta": ("mi", "δ"),
    r"\sum": ("mo", "∑"),
    r"\cdot": ("mo", "·"),
    r"\mapsto": ("mo", "↦"),
    r"\times": ("mo", "×"),
    r"\infty": ("mi", "∞"),
}
_MATH_TOKEN = re.compile(r"\\[A-Za-z]+|[A-Za-z]|\d+(?:\.\d+)?|[-+=/()|,<>!]|[{}_^]|\s+")


class MathError(ValueError):
    """TeX this converter does not know: the text is left as it was."""


def _parse(tokens: list[str], at: int, stop: str | None) -> tuple[list[str], int]:
    """MathML elements from ``tokens[at:]`` up to ``stop`` (``"}"``) or the end."""
    out: list[str] = []
    while at < len(tokens):
        token = tokens[at]
        if token == stop:
            return out, at + 1
        if token == "}":
            raise MathError("unbalanced }")
        at += 1
        if token.isspace():
            continue
        if token == "{":
            group, at = _parse(tokens, at, "}")
            out.append("<mrow>" + "".join(group) + "</mrow>")
        elif token in ("_", "^"):
            if not out:
                raise MathError(f"{token} with nothing before it")
            arg, at = _argument(tokens, at)
            base = out.pop()
            if token == "^" and base.startswith("<msub>"):  # x_i^2
                out.append("<msubsup>" + base[len("<msub>") : -len("</msub>")] + arg + "</msubsup>")
            else:
                tag = "msub" if token == "_" else "msup"
                out.append(f"<{tag}>{base}{arg}</{tag}>")
        elif token == r"\frac":
            top, at = _argument(tokens, at)
            bottom, at = _argument(tokens, at)
            out.append(f"<mfrac>{top}{bottom}</mfrac>")
        elif token == r"\mathrm":
            if at >= len(tokens) or tokens[at] != "{":
                raise MathError(r"\mathrm without {")
            end = tokens.index("}", at)
            word = "".join(tokens[at + 1 : end])
            out.append(f'<mi mathvariant="normal">{html.escape(word)}</mi>')
            at = end + 1
        elif token in _SYMBOLS:
            tag, symbol = _SYMBOLS[token]
            out.append(f"<{tag}>{symbol}</{tag}>")
        elif token.startswith("\\"):
            raise MathError(f"unknown command {token}")
        elif token[0].isdigit():
            out.append(f"<mn>{token}</mn>")
        elif token.isalpha():
            out.append(f"<mi>{token}</mi>")
        else:
            stretchy = ' stretchy="false"' if token in "()|" else ""
            out.append(f"<mo{stretchy}>{html.escape('−' if token == '-' else token)}</mo>")
    if stop is not None:
        raise MathError("missing }")
    return out, at


def _argument(tokens: list[str], at: int) -> tuple[str, int]:
    while at < len(tokens) and tokens[at].isspace():
        at += 1
    if at >= len(tokens):
        raise MathError("missing argument")
    if tokens[at] == "{":
        group, at = _parse(tokens, at + 1, "}")
        return "<mrow>" + "".join(group) + "</mrow>", at
    single, _ = _parse([tokens[at]], 0, None)
    return "".join(single), at + 1


def tex_to_mathml(tex: str, *, display: bool = False) -> str:
    """TeX of the kind the course writes, as a ``<math>`` element; :class:`MathError` on anything else.

    Example::

        >>> tex_to_mathml(r"\\delta_{ij} - 1")
        '<math><msub><mi>δ</mi><mrow><mi>i</mi><mi>j</mi></mrow></msub><mo>−</mo><mn>1</mn></math>'
    """
    tokens = _MATH_TOKEN.findall(tex)
    if "".join(tokens) != tex:
        raise MathError(f"characters this converter does not know in {tex!r}")
    body, _ = _parse(tokens, 0, None)
    mode = ' display="block"' if display else ""
    return f"<math{mode}>" + "".join(body) + "</math>"


_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$\w])\$(?!\s)([^$\n<>]+?)(?<!\s)\$(?![\w$])", re.S)
_SKIP = re.compile(r"<(code|pre|script|style|math)\b.*?</\1\s*>", re.S | re.I)


def render_math(page: str) -> str:
    """``$...$`` and ``$$...$$`` in text (never in code) as MathML; TeX the converter does not know stays as it is."""

    def convert(match: re.Match[str]) -> str:
        display, inline = match.groups()
        tex = html.unescape(display if display is not None else inline)
        try:
            return tex_to_mathml(tex, display=display is not None)
        except MathError:
            return match.group(0)

    def text_only(part: str) -> str:  # the text between tags, never a tag's attributes
        return re.sub(r"(?<=>)([^<]+)", lambda m: _MATH.sub(convert, m.group(1)), ">" + part)[1:]

    out, at = [], 0
    for skipped in _SKIP.finditer(page):
        out += [text_only(page[at : skipped.start()]), skipped.group(0)]
        at = skipped.end()
    return "".join([*out, text_only(page[at:])])


def for_paper(page: str) -> str:
    """A chapter's HTML as both books print it: code wrapped with marks, wide outputs smaller, maths typeset."""
    page = _HIGHLIGHT.sub(lambda m: m.group(1) + wrap_code(m.group(2)) + m.group(3), page)
    return render_math(fit_outputs(page))


# ---------------------------------------------------------------- the index


@dataclass(frozen=True)
class Term:
    """An index entry: how it is listed in each language, and what finds it in a cell's text."""

    label: dict[str, str]
    pattern: dict[str, str]
    code: bool = True  # found in code and outputs too; words only in the text

    def listed(self, lang: str) -> str:
        return self.label.get(lang, self.label["en"])

    def finds(self, lang: str) -> re.Pattern[str]:
        return re.compile(self.pattern.get(lang, self.pattern["en"]))


def _code(name: str, pattern: str | None = None) -> Term:
    """A term that is code: the same in both editions."""
    found = pattern or r"(?<![\w.])" + re.escape(name) + r"(?![\w])"
    return Term({"en": name}, {"en": found})


def _words(en: str, zh: str, en_pattern: str, zh_pattern: str) -> Term:
    return Term({"en": en, "zh": zh}, {"en": en_pattern, "zh": zh_pattern}, code=False)


#: The index of the full handout: gradlab's calls, PyTorch's, the error codes and the course's ideas.
INDEX_TERMS: tuple[Term, ...] = (
    _code("gradlab.track", r"gradlab\.track\("),
    _code("gradlab.check", r"gradlab\.check\("),
    _code("gradlab.check_intent", r"gradlab\.check_intent\("),
    _code("gradlab.explain", r"gradlab\.explain\("),
    _code("gradlab.saved_tensors", r"gradlab\.saved_tensors\("),
    _code("gradlab.grad_report", r"gradlab\.grad_report\("),
    _code("gradlab.draw", r"gradlab\.draw\("),
    _code("gradlab.timeline", r"gradlab\.timeline\("),
    _code("gradlab.measure_memory", r"gradlab\.measure_memory\("),
    _code("gradlab.last_diagnosis", r"gradlab\.last_diagnosis\("),
    _code("python -m gradlab run", r"gradlab run\b"),
    _code("python -m gradlab fix", r"gradlab fix\b"),
    _code("retain_graph=True", r"retain_graph=True"),
    _code(".detach()", r"\.detach\(\)"),
    _code(".data", r"\.data\b(?!\w)"),
    _code("zero_grad()", r"zero_grad\(\)"),
    _code("torch.no_grad()", r"no_grad\(\)"),
    _code("inputs=", r"\binputs="),
    _code("_version", r"\._version\b"),
    _code("saved_tensors_hooks", r"saved_tensors_hooks"),
    _code("allow_mutation_on_saved_tensors", r"allow_mutation_on_saved_tensors"),
    _code("set_detect_anomaly / detect_anomaly", r"(?:set_)?detect_anomaly"),
    _code("torch.autograd.grad", r"autograd\.grad\("),
    _code("torch.inference_mode()", r"inference_mode\(\)"),
    _code("torch.utils.checkpoint", r"\bcheckpoint\("),
    _code("DistributedDataParallel", r"DistributedDataParallel|\bDDP\b"),
    _code("nn.ReLU(inplace=True)", r"inplace=True"),
    _code("fused=True", r"fused=True|\bfused\b"),
    *(_code(f"GL{n:04d}", rf"\bGL{n:04d}\b") for n in range(1, 16)),
    _words("version counter", "版本计数器", r"(?i)version counters?", r"版本计数器"),
    _words("saved tensor", "保存的张量", r"(?i)saved tensors?", r"保存的张量|已保存张量"),
    _words("in-place operation", "原地操作", r"(?i)\bin[- ]place\b", r"原地"),
    _words("leaf tensor", "叶子张量", r"(?i)\bleaf\b|\bleaves\b", r"叶子"),
    _words(
        "graph freed", "计算图已释放", r"(?i)graph (?:was |is )?freed|freed (?:the |its )?graph", r"计算图.{0,6}释放"
    ),
    _words("softmax", "softmax", r"(?i)\bsoftmax\b", r"(?i)softmax"),
    _words("GAN", "GAN", r"\bGAN\b", r"\bGAN\b"),
    _words("actor-critic", "actor-critic", r"(?i)actor-critic", r"(?i)actor-critic"),
    _words("hidden state (RNN)", "隐状态（RNN）", r"(?i)hidden state", r"隐状态"),
    _words("overfit one batch", "在一个批次上过拟合", r"(?i)one (?:fixed )?batch", r"一个(?:固定的)?批次"),
)


_CELL = re.compile(r'<div\b[^>]*\bclass="(?:[^"]*\s)?jp-Cell(?=[\s"])[^"]*"[^>]*>')


_BLOCK = re.compile(r"</?(?:p|li|div|br|tr|td|th|h[1-6]|pre|ul|ol|table)\b[^>]*>", re.I)
_PIECE = re.compile(r"<[^>]+>|&[#\w]+;|[^<&]", re.S)


def _reader_text(cell: str, *, prose: bool) -> tuple[str, list[int]]:
    """The text a reader sees in a cell's HTML, and for each of its characters where it stands in the HTML.

    A block tag reads as a space. ``prose``: the cell's markdown only; its code blocks and any other cell read
    as spaces.
    """
    if prose and "jp-MarkdownCell" not in cell[: cell.index(">")]:
        return "", []
    text: list[str] = []
    where: list[int] = []
    in_pre = 0
    for piece in _PIECE.finditer(cell):
        token = piece.group(0)
        if token.startswith("<"):
            if re.match(r"<pre\b", token, re.I):
                in_pre += 1
            elif re.match(r"</pre\b", token, re.I):
                in_pre = max(0, in_pre - 1)
            if _BLOCK.fullmatch(token):
                text.append(" ")
                where.append(piece.start())
            continue
        shown = html.unescape(token)
        text.append(" " * len(shown) if prose and in_pre else shown)
        where.extend([piece.start()] * len(shown))
    return "".join(text), where


def anchor_cells(body: str, chapter: str, lang: str, found: dict[int, list[str]]) -> str:
    """``body`` (a chapter) with an anchor where each index term first occurs (a word: in the text, code:
    anywhere); ``found`` collects term -> anchor ids, one per chapter."""
    starts = [m.start() for m in _CELL.finditer(body)] + [len(body)]
    out = [body[: starts[0]]]
    done: set[int] = set()
    for number, (start, end) in enumerate(zip(starts, starts[1:])):
        cell = body[start:end]
        views = {prose: _reader_text(cell, prose=prose) for prose in (False, True)}
        places: list[tuple[int, str]] = []
        for at, term in enumerate(INDEX_TERMS):
            if at in done:
                continue
            text, where = views[not term.code]
            match = term.finds(lang).search(text)
            if match is None:
                continue
            anchor = f"ix-{chapter}-{number}-{at}"
            found.setdefault(at, []).append(anchor)
            done.add(at)
            places.append((where[match.start()], anchor))
        for place, anchor in sorted(places, reverse=True):
            cell = f'{cell[:place]}<span id="{anchor}"></span>{cell[place:]}'
        out.append(cell)
    return "".join(out)


def index_html(
    found: dict[int, list[str]],
    lang: str,
    title: str,
    page_number: Callable[[str], str],
    pages: dict[str, int] | None = None,
) -> str:
    """The index: every term found, in alphabetical order, with the pages of the cells that use it.

    Without ``pages`` each cell gets a link whose number the printer fills in (``page_number``); with the
    pages a first print found, each page is listed once per term, as a link to its first cell there.
    """
    entries = []
    for at in sorted(found, key=lambda t: INDEX_TERMS[t].listed(lang).lstrip("._-").lower()):
        if pages is None:
            refs = [f'<a class="ix-ref" href="#{anchor}">{page_number(anchor)}</a>' for anchor in found[at]]
        else:
            first: dict[int, str] = {}
            for anchor in found[at]:
                first.setdefault(pages[anchor], anchor)
            refs = [f'<a class="ix-ref" href="#{anchor}">{page}</a>' for page, anchor in sorted(first.items())]
        entries.append(
            f'<li><span class="ix-term{" ix-code" if INDEX_TERMS[at].code else ""}">'
            f"{html.escape(INDEX_TERMS[at].listed(lang))}</span> "
            f'<span class="ix-pages">{", ".join(refs)}</span></li>'
        )
    return (
        f'<section class="handout-chapter handout-index" id="handout-index" style="page: index">'
        f'<h1>{html.escape(title)}</h1><ul class="ix">{"".join(entries)}</ul></section>'
    )
