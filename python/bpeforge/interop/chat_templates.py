"""Chat templates for the Hugging Face export: the built-in ones by name, a
template of your own (Jinja text or a file), and the checks an export makes
before writing one into ``tokenizer_config.json``.

``transformers``' ``apply_chat_template`` renders the template and encodes
the result; the special tokens the template writes must be special tokens
of the model, or they would be encoded as ordinary text, several ids each.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from ._common import InteropWarning, PathLike


@dataclass(frozen=True)
class BuiltinTemplate:
    """A chat template bpeforge ships: its Jinja text, the special tokens it
    writes (the model must have them) and what it is."""

    text: str
    needs: tuple[str, ...]
    about: str


# ChatML as transformers' chat-templating guide writes it.
_CHATML = ("{% for message in messages %}"
           "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
           "{% endfor %}"
           "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

#: The built-in templates, by the name ``chat_template=`` (CLI ``--chat-template``) takes.
BUILTIN_TEMPLATES: dict[str, BuiltinTemplate] = {
    "chatml": BuiltinTemplate(_CHATML, ("<|im_start|>", "<|im_end|>"),
                              "ChatML, each message <|im_start|>ROLE\\nTEXT<|im_end|>\\n"),
}

# Text in a template that looks like a special token (ChatML's, Llama 3's).
_TOKEN_LIKE = re.compile(r"<\|[^|\s{}'\"]+\|>")


def chat_template_text(value: str | PathLike, special_tokens: Sequence[str]) -> str:
    """The Jinja text of ``value`` for a model with ``special_tokens``.

    ``value`` is a built-in name (``"chatml"``, see :data:`BUILTIN_TEMPLATES`),
    Jinja text (a ``str`` holding ``{{`` or ``{%``) or a file (an
    ``os.PathLike`` such as ``pathlib.Path``, read as UTF-8). A built-in's
    special tokens must be special tokens of the model (ParameterError naming
    them and how to add them); text that looks like a special token
    (``<|...|>``) but is not one of the model's warns (it would be encoded as
    ordinary text). A template Jinja cannot parse is refused, naming the line
    (checked where ``jinja2``, which ``transformers`` needs, is installed)."""
    if isinstance(value, str) and value in BUILTIN_TEMPLATES:
        builtin = BUILTIN_TEMPLATES[value]
        _require_tokens(value, builtin.needs, special_tokens)
        return builtin.text
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            raise ParameterError(f"chat_template {value!r} is neither a built-in template ({_builtin_names()}) nor "
                                 "Jinja text (no {{ or {%); to read a template file, pass it as a pathlib.Path")
        text, where = value, "chat_template"
    elif isinstance(value, os.PathLike):
        text, where = _read_template_file(value), f"chat_template {os.fspath(value)}"
    else:
        raise ParameterError(f"chat_template must be a built-in name, Jinja text or a path, got {type(value).__name__}")
    if not text.strip():
        raise ParameterError(f"{where}: the template is empty")
    _check_syntax(text, where)
    _warn_about_token_like_text(text, special_tokens, where)
    return text


def _builtin_names() -> str:
    return ", ".join(BUILTIN_TEMPLATES)


def _require_tokens(name: str, needs: Sequence[str], special_tokens: Sequence[str]) -> None:
    missing = [t for t in needs if t not in special_tokens]
    if missing:
        raise ParameterError(
            f"chat_template {name!r} writes the special tokens {list(needs)!r}, and this model lacks {missing!r}: "
            f"train it with special_tokens={missing!r}, or add them to a model in Python with "
            f"Tokenizer.with_special_tokens({missing!r}) (every old id is kept)")


def _read_template_file(path: PathLike) -> str:
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ParameterError(f"chat_template {name}: cannot read it ({e.strerror or e}); "
                             f"the built-in templates are {_builtin_names()}") from e
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ParameterError(f"chat_template {name}, line {line}: invalid UTF-8 ({e.reason})") from e


def _check_syntax(text: str, where: str) -> None:
    """Parse ``text`` as ``transformers`` does (sandboxed Jinja, ``trim_blocks``,
    ``lstrip_blocks``, loop controls and its ``{% generation %}`` block)."""
    try:
        import jinja2
        import jinja2.ext
        import jinja2.nodes
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:  # pragma: no cover - jinja2 comes with transformers, the only reader
        return

    class GenerationBlock(jinja2.ext.Extension):
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> Any:  # pragma: no cover - parsing only
            return caller()

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    try:
        env.parse(text)
    except jinja2.TemplateSyntaxError as e:
        raise ParameterError(f"{where}, line {e.lineno}: not a valid Jinja template ({e.message})") from e


def _warn_about_token_like_text(text: str, special_tokens: Sequence[str], where: str) -> None:
    unknown = sorted({t for t in _TOKEN_LIKE.findall(text) if t not in special_tokens})
    if unknown:
        warnings.warn(f"{where} writes {unknown!r}, which are not special tokens of this model: they are encoded "
                      "as ordinary text, several ids each (add them with Tokenizer.with_special_tokens)",
                      InteropWarning, stacklevel=5)  # the caller of Tokenizer.to_huggingface
