"""Which options a command line gives, read as click reads its words: `--name VALUE`,
`--name=VALUE`, `-e VALUE` and `-eVALUE` (a short option's value attached), a value never
read as an option (`-e '-exp(x)'`, `--range -5:5`), nothing after `--`. Used to refuse an option
that takes one value given more than once, under any of its names (`-e A -eB`, `--expr A -e B`):
click would keep the last one silently."""
from __future__ import annotations


def repeated_single_options(words: list[str], params) -> list[tuple[str, int]]:
    """(the option's last name, how many times it was given) for each option of `params` that
    takes one value and was given more than once in `words` (a command's words after its
    name). `params`: the rows of gradcli/_cli_table.py, (keyword, names, kind, default,
    multiple, required)."""
    takes_value = {}  # option name -> its keyword
    single = {}  # keyword -> its names, for the options that take one value
    for keyword, names, kind, _default, multiple, _required in params:
        for name in names:
            takes_value[name] = kind != "flag"
        if names and kind != "flag" and not multiple:
            single[keyword] = names
    keyword_of = {name: keyword for keyword, names, *_ in params for name in names}
    counts: dict[str, int] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            break
        if word.startswith("--"):
            name, equals, _ = word.partition("=")
            attached = bool(equals)
        elif word.startswith("-") and len(word) > 1:
            name, attached = word[:2], len(word) > 2
        else:
            continue  # an argument
        if name not in keyword_of:
            continue  # not an option of this command (click reports it)
        counts[keyword_of[name]] = counts.get(keyword_of[name], 0) + 1
        if takes_value[name] and not attached:
            i += 1  # its value, whatever it looks like
    return [(single[k][-1], n) for k, n in counts.items() if n > 1 and k in single]
