"""Module categories (attention, mlp, norm, embedding, head, other) from a module's path and class name, for any
model. Torch-free: the runner names its modules with it, the kernel and memory analyzers read them back.

A module's own category comes from ordered keyword rules, first on its class name, then on the last part of its
path: the class says more than the attribute name (`post_attention_layernorm` is an RMSNorm, not attention).
Rotary position tables are no category of their own, so their work counts for the attention that calls them.
What a kernel or an allocation belongs to is its deepest enclosing module with a category other than `other`:
the Linear `layers.0.attn.q_proj` counts as attention, `blocks.0.mlp.0` as mlp.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

ATTENTION, MLP, NORM, EMBEDDING, HEAD, OTHER = "attention", "mlp", "norm", "embedding", "head", "other"
CATEGORIES = (ATTENTION, MLP, NORM, EMBEDDING, HEAD, OTHER)
# Work outside every module range: the loss, the optimizer step, the root module's own code; in memory also
# everything allocated before recording (the weights, the optimizer's state).
NO_MODULE = "no module"

# Names that would match a rule below but hold no category (RoPE tables are called from inside attention).
_NEUTRAL = re.compile(r"rotary|^rope($|_)")
# Ordered keyword rules, first match wins: on the lower-case class name, then on the lower-case last path part.
_TYPE_RULES = (
    (ATTENTION, re.compile(r"attn|attention")),
    (MLP, re.compile(r"mlp|ffn|feed_?forward|swiglu|geglu")),
    (NORM, re.compile(r"norm")),
    (EMBEDDING, re.compile(r"embedding")),
    (HEAD, re.compile(r"lmhead|unembed")),
)
_PART_RULES = (
    (ATTENTION, re.compile(r"attn|attention")),
    (MLP, re.compile(r"mlp|ffn|feed_?forward")),
    (NORM, re.compile(r"norm|^ln(\d|_|$)")),
    (EMBEDDING, re.compile(r"emb|^wte$|^wpe$")),
    (HEAD, re.compile(r"^(lm_head|head|unembed|unembedding)$")),
)
# Llama's top-level projection is `output`; deeper down (BERT's `attention.output`) the word means anything.
_TOP_LEVEL_HEAD = re.compile(r"^output$")


def module_depth(path: str) -> int:
    """`transformer.h.0.attn` → 4; the root module ("") → 0."""
    return len(path.split(".")) if path else 0


def category_of(path: str, type_name: str) -> str:
    """The module's own category from its class name, else the last part of its path; `other` when neither says."""
    type_text, part = type_name.lower(), path.rsplit(".", 1)[-1].lower()
    if _NEUTRAL.search(type_text) or _NEUTRAL.search(part):
        return OTHER
    found = _first_match(type_text, _TYPE_RULES) or _first_match(part, _PART_RULES)
    return found or (HEAD if module_depth(path) == 1 and _TOP_LEVEL_HEAD.match(part) else OTHER)


def _first_match(text: str, rules: tuple[tuple[str, re.Pattern[str]], ...]) -> str | None:
    return next((category for category, pattern in rules if text and pattern.search(text)), None)


def module_category(path: str, types: Mapping[str, str]) -> str:
    """The category of the deepest module on `path`'s chain (itself, then its parents) that has one.

    `types` maps module paths to class names where known; a parent missing from it is judged by its name alone.
    """
    parts = path.split(".") if path else []
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        category = category_of(prefix, types.get(prefix, ""))
        if category != OTHER:
            return category
    return OTHER
