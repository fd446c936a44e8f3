"""Names shown to readers, each derived once from the constant it names."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from ..core.bands import EXTREME, MIDDLE

if TYPE_CHECKING:
    from ..audits.filtered import Filtered

WARNING = "warning: "
"""How every warning line starts, in every view, format and stderr note: lower case, as ``sigmaudit: warning: ...``
on stderr and compilers write it (issue 42: lines began in upper case in some views and "warning:" in others).
What the warning is about (drift, a post-filter dump, DAPO's loop) follows it; nothing else shouts."""
EXTREME_LABEL = EXTREME.describe("p")
"""``p < 0.1 or p > 0.9``: the extreme band of :data:`sigmaudit.core.weighting.EXTREME`."""
MIDDLE_LABEL = MIDDLE.describe("p")
"""``0.4 ≤ p ≤ 0.6``: the middle band of :data:`sigmaudit.core.weighting.MIDDLE`."""
QUANTILE_NAMES = {0.25: "lower quartile", 0.5: "median", 0.75: "upper quartile"}
"""How the quantiles of p̂ are named in captions, legends and tables."""


def prior_kind_words(kind: str) -> str:
    """A corpus prior's kind (:attr:`sigmaudit.core.prior.GridPrior.kind`: ``beta+atoms/1``, ``smooth-grid``,
    ``grid-em``) in words a practitioner reads."""
    family, _, components = kind.partition("/")
    if family == "beta+atoms":
        betas = "a Beta" if components in ("", "1") else f"{components} Betas"
        return f"{betas} plus point masses at p = 0 and 1"
    return {"smooth-grid": "a smoothed histogram of p", "grid-em": "a histogram of p"}.get(family, kind)


def filtered_line(filtered: Filtered, consequence: str = "silent rates read from it are understated") -> str:
    """The one warning line every command shows on a post-filter dump (``filtered`` set): the
    statistical test's message as it is, any other source named, then what it means for this
    command's numbers (``consequence``)."""
    if filtered.source == "statistics":
        return f"{WARNING}{filtered.message}" + (f"; {consequence}" if consequence not in filtered.message else "")
    return f"{WARNING}post-filter dump ({filtered.source}): {filtered.message}; {consequence}"


TOKENS_UNKNOWN = ("not known: the log has no token count per rollout (a character count is not one; --length-col "
                  "names one)")
"""What every view says when a log carries no lengths."""


def tokens_words(missing: int, source: str | None) -> str:
    """Why the share of generated tokens in silent groups is not known, after ``generated tokens:``: no lengths
    logged, some rollouts without one, or none generated."""
    if source is None:
        return TOKENS_UNKNOWN
    if missing:
        have = "rollout with a reward has" if missing == 1 else "rollouts with a reward have"
        return f"not known in full: {missing:,} {have} no length ({source})"
    return f"none logged ({source})"


PROMPT_LABEL_WIDTH = 24
"""Characters of a prompt's text in its label (then `` #`` and 6 hex digits: 32 columns, within the key column's half of
a 100-column screen); the ``--skip-out`` file and JSON keep the whole key."""
_USER_TURNS = tuple(re.compile(p, re.S) for p in (
    r"<\|im_start\|>user\s*(.*?)(?:<\|im_end\|>|$)",  # ChatML (Qwen, many others)
    r"<\|start_header_id\|>user<\|end_header_id\|>\s*(.*?)(?:<\|eot_id\|>|$)",  # Llama 3
    r"<start_of_turn>user\s*(.*?)(?:<end_of_turn>|$)",  # Gemma
    r"<｜User｜>(.*?)(?:<｜Assistant｜>|$)",  # DeepSeek
    r"\[INST\]\s*(.*?)\s*(?:\[/INST\]|$)",  # Mistral, Llama 2
))
_SPECIAL_TOKEN = re.compile(r"<\|[^|<>]{1,40}\|>|<｜[^｜<>]{1,40}｜>")


def prompt_label(key: str, width: int = PROMPT_LABEL_WIDTH) -> str:
    """A prompt key as a reader tells prompts apart in a table: a chat-templated key (what verl, SkyRL and AReaL
    log) by its last user turn, special tokens and runs of white space dropped, cut to ``width`` characters; a
    label that is not the key itself ends in ``#`` and the first 6 hex digits of the key's SHA-256, so two
    prompts never share a label and the label finds its key (``--skip-out``, ``-f json``) with ``grep``."""
    text = key
    for pattern in _USER_TURNS:
        turns = pattern.findall(key)
        if turns:
            text = turns[-1]
            break
    text = " ".join(_SPECIAL_TOKEN.sub(" ", text).split())
    if text == key and len(key) <= width:
        return key
    short = text if len(text) <= width else text[: width - 1].rstrip() + "…"
    return f"{short} #{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:6]}"


LABEL_NOTE = ("a prompt is shown by its last user turn, cut, with # and its key's SHA-256 (the skip list and "
              "-f json keep whole keys)")
"""What a per-prompt table's note says when :func:`prompt_label` shortened a key."""
