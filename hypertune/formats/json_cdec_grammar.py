"""The grammar of cdec's JSON forests as compiled kernels over the JSON lexer (:mod:`json_lexer`): one pass
over a file's objects that fills the arrays of :class:`Scanned` (the format and how the reader builds graphs
from them: :mod:`hypertune.formats.cdec_json`).

An object's members are read in order, each value checked as JSON first (:func:`json_lexer.skip_value`),
as json would read the whole object and the keys then be taken in order: ``"rules"`` and ``"features"``
replace what an earlier one gave, an ``"edges"`` list waits for the ``"node"`` that takes it (its edges are
read at once, and again at the node when ``"rules"`` or ``"features"`` changed in between), and in an edge
or node object the last of a repeated key counts. Where cdec writes a list, an object counts as the list
of its members (json's ordered pairs), none of them an id, a name or an edge. The first problem stops the
pass with an error code (:func:`hypertune.formats._scan.fail`): a JSON one at once, an edge's when its node
comes, in the order a reader taking the keys in order meets them.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from hypertune.compiled import helper_jit, uncounted_jit
from hypertune.formats._scan import (
    MAX_DIGITS,
    TABLE_FULL,
    fail,
    find_id,
    intern,
    key_id,
    parse_integer,
    space_width,
    unicode_digit,
)
from hypertune.formats.json_lexer import (
    HUGE_INTEGER,
    NOT_A_NUMBER,
    NOT_FINITE,
    NOT_JSON,
    after_item,
    count_items,
    equals_integer,
    first_item,
    has_backslash,
    int_token,
    key_is,
    literal,
    next_item,
    number_value,
    open_container,
    skip,
    skip_string,
    skip_value,
    string_end,
    string_text,
    ws,
)

_jit = numba.njit(cache=True, nogil=True)
_inline = helper_jit  # not inline="always": see hypertune.compiled.helper_jit


class Scanned(NamedTuple):
    """What one compiled pass over a file fills (sized by the caller from upper bounds).

    Per edge (the graphs' edges one after another, axiom edges included): its head (a node of its own
    graph), arity, target length and feature count. Tails, target tokens (a word id of the ``words``
    table, or ``-k`` for the k-th tail) and features (a ``names`` id and a value) follow each other in
    edge order. ``flagged`` lists the values the exact fast path left to ``float()``: (feature index,
    start, end). Per node: its ``cat`` (a ``labels`` id, -1 for none). Per graph: nodes and edges so far
    (ends), axioms added, the byte where its object starts. ``feature_list`` holds the names of the
    current object's ``"features"``; ``rule_starts``, ``rule_ends`` and ``rule_graphs`` give, per rule id
    (a ``rule_ids`` key), the tokens of its target in ``rule_tokens`` and the graph whose ``"rules"`` gave
    it. ``sizes``: see the ``_EDGES .. _SAVED`` indices. ``error`` and ``deferred`` (an edge's error, raised
    when its node comes): error records of :func:`hypertune.formats._scan.fail`, numbers node, edge, a, b.
    ``stack``: scratch of :func:`json_lexer.skip_value`; ``cursor``: where strings decoded from escapes go
    next (after the file's bytes); ``digits``: the Unicode digits (:func:`~hypertune.formats._scan.unicode_digits`,
    empty until a rule needs them).
    """

    head: np.ndarray
    arity: np.ndarray
    target_lengths: np.ndarray
    feature_counts: np.ndarray
    tails: np.ndarray
    target: np.ndarray
    names: np.ndarray
    values: np.ndarray
    flagged: np.ndarray
    labels: np.ndarray
    graphs: np.ndarray
    feature_list: np.ndarray
    rule_starts: np.ndarray
    rule_ends: np.ndarray
    rule_graphs: np.ndarray
    rule_tokens: np.ndarray
    sizes: np.ndarray
    error: np.ndarray
    deferred: np.ndarray
    stack: np.ndarray
    cursor: np.ndarray
    digits: np.ndarray


# indices of ``sizes``: edges, tails, target tokens, features, flagged values (the part an "edges" list
# read again goes back to), nodes, graphs, rule tokens so far; then the current object's state: its
# "features" count (-1: none), cdec edge number, edges listed for the next node and where their list
# starts, whether "rules" or "features" changed since (the list is read again), node, axioms added, start
# byte; from _SAVED the first five as they were before the list was read
(_EDGES, _TAILS, _TARGET, _FEATURES, _FLAGGED, _NODES, _GRAPHS, _RULE_TOKENS, _NAMES, _NEXT_EDGE, _PENDING,
 _PENDING_AT, _STALE, _NODE, _AXIOMS, _START, _SAVED) = range(17)  # fmt: skip
SIZES = _SAVED + 5
GRAPHS = _GRAPHS
FLAGGED = _FLAGGED

# error codes (their messages: cdec_json._MESSAGES)
(SYNTAX, TOP, NO_GRAPH, HUGE, RULES_SHAPE, RULES_ITEM, RULE_STRING, FEATURES_SHAPE, EDGES_TYPE, TWO_EDGES,
 NODE_TYPE, IN_EDGES, EDGES_AFTER, NO_NODES, EDGE_NOT_OBJECT, TAIL_TYPE, TAIL_ID, FEATS_SHAPE, FID_RANGE,
 FID_TYPE, VALUE_TYPE, VALUE_INF, UNKNOWN_RULE, RULE_FORMAT, TARGET_TAIL) = range(1, 26)  # fmt: skip
NEED_DIGITS = -3  # not an error: scan again with the Unicode digits (TABLE_FULL: with larger tables)

BIG_KEY = 10**18  # the rule_ids key of a rule id of more digits: BIG_KEY + its id in the ``bigs`` table
BIG_VARIABLE = 2 * 10**18  # rule token -(BIG_VARIABLE + id): a variable [k], k of more digits (``bigs`` id)
_FEW_FIELDS = -4  # what _target answers for a rule of fewer than three fields

_K_RULES, _K_FEATURES = literal('"rules"'), literal('"features"')
_K_EDGES, _K_NODE = literal('"edges"'), literal('"node"')
_K_TAIL, _K_FEATS, _K_RULE = literal('"tail"'), literal('"feats"'), literal('"rule"')
_K_IN_EDGES, _K_CAT = literal('"in_edges"'), literal('"cat"')


# ---------------------------------------------------------------------- rules


@_inline
def _variable(buf, a, b, digits):  # pragma: no cover - compiled
    """The target word ``buf[a:b]`` as a variable ``[k]`` or ``[X,k]`` (``^\\[(?:[^\\],\\s]+,)?(\\d+)\\]$``,
    ``\\d`` any Unicode decimal digit): ``(k, digits start, end)`` with k -1 for a word, -2 when its digits
    make more than 18 significant ones, :data:`NEED_DIGITS` when only the Unicode digits can tell."""
    if b - a < 3 or buf[a] != 91 or buf[b - 1] != 93:
        return -1, 0, 0
    d = a + 1
    for j in range(a + 1, b - 1):
        if buf[j] == 44:
            if j == a + 1:
                return -1, 0, 0
            for q in range(a + 1, j):
                if buf[q] == 93:
                    return -1, 0, 0
            d = j + 1
            break
    if d == b - 1:
        return -1, 0, 0
    for j in range(d, b - 1):  # any ASCII byte but a digit makes a word
        if buf[j] < 128 and (buf[j] < 48 or buf[j] > 57):
            return -1, 0, 0
    value = significant = 0
    j = d
    while j < b - 1:
        digit, width = (buf[j] - 48, 1) if buf[j] < 128 else unicode_digit(buf, j, b - 1, digits)
        if digit == -2:
            return NEED_DIGITS, 0, 0
        if digit < 0:
            return -1, 0, 0
        if significant > 0 or digit > 0:
            significant += 1
            value = value * 10 + digit if significant <= MAX_DIGITS else value
        j += width
    return (value if significant <= MAX_DIGITS else -2), d, b - 1


@_inline
def _next_word(buf, j, end):  # pragma: no cover - compiled
    """The next word of ``buf[j:end]`` as ``str.split()`` splits (a rule's text may hold a line feed, which
    ``_scan.next_token``, made for text already split into lines, does not end a token at)."""
    while j < end:
        width = space_width(buf, j)
        if width == 0:
            break
        j += width
    start = j
    while j < end and space_width(buf, j) == 0:
        j += 1
    return start, j


@uncounted_jit
def _target(buf, s, e, out, words, bigs, dest, pos):  # pragma: no cover - compiled
    """The target side of the rule text ``buf[s:e]`` (its third ``|||`` field) as tokens written to
    ``dest[pos:]``: word ids, ``-(k + 1)`` for a variable ``[k]``, ``-(BIG_VARIABLE + id)`` for one whose
    number only the ``bigs`` table holds. Returns their count, :data:`_FEW_FIELDS` for a rule of fewer than
    three fields, or a restart code (:data:`TABLE_FULL`, :data:`NEED_DIGITS`)."""
    separators = 0
    first = -1
    last = e
    j = s
    while j < e:
        if buf[j] == 124 and j + 2 < e and buf[j + 1] == 124 and buf[j + 2] == 124:
            separators += 1
            if separators == 2:
                first = j + 3
            elif separators == 3:
                last = j
                break
            j += 3
        else:
            j += 1
    if separators < 2:
        return _FEW_FIELDS
    count = 0
    j = first
    while True:
        a, b = _next_word(buf, j, last)
        if a == last:
            return count
        j = b
        k, d0, d1 = _variable(buf, a, b, out.digits)
        if k == NEED_DIGITS:
            return NEED_DIGITS
        if pos + count >= dest.size:
            return TABLE_FULL
        if k >= 0:
            token = -(k + 1)
        else:
            interned = intern(bigs, buf, d0, d1) if k == -2 else intern(words, buf, a, b)
            if interned < 0:
                return TABLE_FULL
            token = -(BIG_VARIABLE + interned) if k == -2 else interned
        dest[pos + count] = token
        count += 1


@_inline
def _rule_key(buf, s, e, bigs):  # pragma: no cover - compiled
    """``(room, key)``: the ``rules_ids`` key of the (checked) integer ``buf[s:e]``, its value or past
    :data:`BIG_KEY` for one of more than 18 digits (room False when ``bigs`` is full)."""
    ok, value = parse_integer(buf, s, e)
    if ok:
        return True, value
    k = intern(bigs, buf, s, e)
    return k >= 0, BIG_KEY + k


@uncounted_jit
def _rule(buf, rid_s, rid_e, s, e, out, words, rule_ids, bigs):  # pragma: no cover - compiled
    """Rule ``buf[rid_s:rid_e]`` (an integer) with the (checked) string ``buf[s:e]``: its target tokenized.
    Returns 0, ``_FEW_FIELDS`` or a restart code."""
    sizes = out.sizes
    a, b = string_text(buf, s, e, out.cursor)
    first = sizes[_RULE_TOKENS]
    got = _target(buf, a, b, out, words, bigs, out.rule_tokens, first)
    if got < 0:
        return got
    room, key = _rule_key(buf, rid_s, rid_e, bigs)
    k = key_id(rule_ids, key) if room else -1
    if k < 0:
        return TABLE_FULL
    out.rule_starts[k], out.rule_ends[k], out.rule_graphs[k] = first, first + got, sizes[_GRAPHS]
    sizes[_RULE_TOKENS] += got
    return 0


@uncounted_jit
def _rules(buf, vs, n, out, words, rule_ids, bigs):  # pragma: no cover - compiled
    """A ``"rules"`` value: ``[id, rule, ...]``, each rule's target tokenized once."""
    start = out.sizes[_START]
    if buf[vs] == 123:  # the members of an object: pairs, not ids
        count = count_items(buf, vs, n)[0]
        if count % 2:
            return fail(out.error, RULES_SHAPE, vs, vs, at=start)
        return fail(out.error, RULES_ITEM, vs, vs, at=start) if count else 0
    if buf[vs] != 91:
        return fail(out.error, RULES_SHAPE, vs, vs, at=start)
    count = 0
    code = a = b = token_start = token_end = rid_start = rid_end = 0
    i = first_item(buf, vs, n)
    while i >= 0:
        e = skip(buf, i)
        if count % 2 == 0:
            rid_start, rid_end = i, e
        elif code == 0:
            if buf[i] != 34 or not int_token(buf, rid_start, rid_end):
                code, a = RULES_ITEM, count // 2
            else:
                got = _rule(buf, rid_start, rid_end, i, e, out, words, rule_ids, bigs)
                if got == _FEW_FIELDS:
                    code, a, b, token_start, token_end = RULE_STRING, rid_start, rid_end, i, e
                elif got < 0:
                    return got
        count += 1
        i = next_item(buf, e, n)
    if count % 2:
        return fail(out.error, RULES_SHAPE, vs, vs, at=start)
    if code:
        return fail(out.error, code, token_start, token_end, 0, 0, a, b, at=start)
    return 0


@uncounted_jit
def _features(buf, vs, n, out, names):  # pragma: no cover - compiled
    """A ``"features"`` value: the names an integer in ``feats`` indexes."""
    sizes = out.sizes
    if buf[vs] == 123 and count_items(buf, vs, n)[0] == 0:
        sizes[_NAMES] = 0
        return 0
    if buf[vs] != 91:
        return fail(out.error, FEATURES_SHAPE, vs, vs, at=sizes[_START])
    count = 0
    i = first_item(buf, vs, n)
    while i >= 0:
        if buf[i] != 34:
            return fail(out.error, FEATURES_SHAPE, i, i, at=sizes[_START])
        e = skip_string(buf, i)
        a, b = string_text(buf, i, e, out.cursor)
        k = intern(names, buf, a, b)
        if k < 0:
            return TABLE_FULL
        out.feature_list[count] = k
        count += 1
        i = next_item(buf, e, n)
    sizes[_NAMES] = count
    return 0


# ---------------------------------------------------------------------- edges


@_inline
def _tail_list(buf, vs, n, head, tails, t0):  # pragma: no cover - compiled
    """The ``"tail"`` value at ``buf[vs]`` of an edge of node ``head``, its ids written to ``tails[t0:]``.
    Returns ``(problem, start, end, arity, value end)``: problem ``TAIL_TYPE`` (not a list of integers; it
    wins), ``TAIL_ID`` (an id outside ``0 .. head-1``; the first such at ``start, end``) or 0; the value's
    end -1 when it is not a list."""
    if buf[vs] == 123:  # the members of an object are no ids
        return (TAIL_TYPE if count_items(buf, vs, n)[0] else 0), 0, 0, 0, -1
    if buf[vs] != 91:
        return TAIL_TYPE, 0, 0, 0, -1
    problem = bad_start = bad_end = arity = 0
    j, ve = open_container(buf, vs, n)
    while j >= 0:
        te = skip(buf, j)
        if problem == TAIL_TYPE:
            pass
        elif not int_token(buf, j, te):
            problem = TAIL_TYPE
        else:
            ok, t = parse_integer(buf, j, te)
            if (not ok or t < 0 or t >= head) and problem == 0:
                problem, bad_start, bad_end = TAIL_ID, j, te
            tails[t0 + arity] = t
            arity += 1
        j, ve = after_item(buf, te, n)
    return problem, bad_start, bad_end, arity, ve


@_inline
def _feature_index(buf, j, fe, known):  # pragma: no cover - compiled
    """The ``feats`` item ``buf[j:fe]`` that is not a string, as an index into the ``known`` names of
    ``"features"`` (-1 when none came): ``(problem, index)``, problem ``FID_TYPE`` (not an integer),
    ``FID_RANGE`` or 0."""
    if not int_token(buf, j, fe):
        return FID_TYPE, 0
    ok, fid = parse_integer(buf, j, fe)
    if not ok or fid < 0 or fid >= max(known, 0):
        return FID_RANGE, 0
    return 0, fid


@_inline
def _feature_value(buf, j, fe):  # pragma: no cover - compiled
    """The feature value ``buf[j:fe]``: :func:`~hypertune.formats.json_lexer.number_value` in this grammar's
    problem codes, ``VALUE_TYPE`` (not a number) and ``VALUE_INF`` (not finite)."""
    problem, x, exact = number_value(buf, j, fe)
    return (VALUE_TYPE if problem == NOT_A_NUMBER else VALUE_INF if problem == NOT_FINITE else 0), x, exact


@_inline
def _feat_list(buf, vs, n, out, names):  # pragma: no cover - compiled
    """The ``"feats"`` value at ``buf[vs]``: its (name, value) pairs written after the features so far, up
    to the first bad pair (values ``float()`` must convert go to ``out.flagged``). Returns ``(problem,
    start, end, a, b, count, value end)``: problem :data:`TABLE_FULL`, ``FEATS_SHAPE`` (not a list of
    pairs; it wins), the first bad pair's code with its item's ``start, end`` and the message's numbers
    ``a, b``, or 0; the value's end -1 when it is not a list."""
    sizes = out.sizes
    if buf[vs] == 123:  # the members of an object: pairs, each no feature id or name
        count, first, last = count_items(buf, vs, n)
        if count % 2:
            return FEATS_SHAPE, 0, 0, 0, 0, 0, -1
        return (FID_TYPE if count else 0), first, last, 0, 0, 0, -1
    if buf[vs] != 91:
        return FEATS_SHAPE, 0, 0, 0, 0, 0, -1
    f0 = sizes[_FEATURES]
    count = items = name = 0
    pair = pair_start = pair_end = pair_a = pair_b = 0
    j, ve = open_container(buf, vs, n)
    while j >= 0:
        fe = skip(buf, j)
        code = a = b = 0
        if pair != 0:
            pass
        elif items % 2 == 0 and buf[j] == 34:  # a name
            s2, e2 = string_text(buf, j, fe, out.cursor)
            name = intern(names, buf, s2, e2)
            if name < 0:
                return TABLE_FULL, 0, 0, 0, 0, 0, -1
        elif items % 2 == 0:  # an index into "features"
            code, k = _feature_index(buf, j, fe, sizes[_NAMES])
            name = out.feature_list[k] if code == 0 else name
            b = max(sizes[_NAMES], 0)
        else:  # its value
            code, x, exact = _feature_value(buf, j, fe)
            if code == 0 and not exact:
                k = sizes[_FLAGGED]
                out.flagged[k, 0], out.flagged[k, 1], out.flagged[k, 2] = f0 + count, j, fe
                sizes[_FLAGGED] += 1
            if code == 0:
                out.names[f0 + count], out.values[f0 + count] = name, x
                count += 1
            a = name
        if code != 0:
            pair, pair_start, pair_end, pair_a, pair_b = code, j, fe, a, b
        items += 1
        j, ve = after_item(buf, fe, n)
    if items % 2 == 1:
        return FEATS_SHAPE, 0, 0, 0, 0, 0, ve
    return pair, pair_start, pair_end, pair_a, pair_b, count, ve


@_inline
def _copy_target(tokens, a, b, target, g0, arity):  # pragma: no cover - compiled
    """A rule's target tokens ``tokens[a:b]`` written to ``target[g0:]``, each variable ``[k]`` as the edge's
    ``-k``. Returns ``(code, length, k)``: code :data:`TABLE_FULL`, ``TARGET_TAIL`` (``[k]`` is not a tail
    of the edge's ``arity``; k ``-(id + 1)`` for a number of the ``bigs`` table) or 0."""
    if g0 + b - a > target.size:
        return TABLE_FULL, 0, 0
    for q in range(a, b):
        t = tokens[q]
        if t <= -BIG_VARIABLE:
            return TARGET_TAIL, 0, -(-t - BIG_VARIABLE + 1)
        if t < 0:
            k = -t - 1
            if k < 1 or k > arity:
                return TARGET_TAIL, 0, k
            t = -k
        target[g0 + q - a] = t
    return 0, b - a, 0


@uncounted_jit
def _written_rule(buf, rule_s, rule_e, arity, out, words, bigs):  # pragma: no cover - compiled
    """The target of the rule string ``buf[rule_s:rule_e]`` of an edge (rare: cdec writes a rule id)
    written after the target tokens so far. Returns ``(code, length, k)`` as :func:`_copy_target`, code
    also ``RULE_FORMAT`` or a restart code."""
    g0 = out.sizes[_TARGET]
    a, b = string_text(buf, rule_s, rule_e, out.cursor)
    length = _target(buf, a, b, out, words, bigs, out.target, g0)
    if length < 0:
        return (RULE_FORMAT if length == _FEW_FIELDS else length), 0, 0
    return _copy_target(out.target, g0, g0 + length, out.target, g0, arity)


@_inline
def _edge_target(buf, rule_s, rule_e, arity, out, words, rule_ids, bigs):  # pragma: no cover - compiled
    """An edge's target written after the target tokens so far: that of its ``"rule"`` value
    ``buf[rule_s:rule_e]`` (-1: none), a rule id or (rare) a rule string, or the tails in order (no rule,
    or null). Returns ``(code, length, k)`` as :func:`_written_rule`, code also ``UNKNOWN_RULE``."""
    sizes = out.sizes
    g0 = sizes[_TARGET]
    if rule_s >= 0 and buf[rule_s] == 34:
        return _written_rule(buf, rule_s, rule_e, arity, out, words, bigs)
    if rule_s < 0 or buf[rule_s] == 110:
        if g0 + arity > out.target.size:
            return TABLE_FULL, 0, 0
        for k in range(arity):
            out.target[g0 + k] = -(k + 1)
        return 0, arity, 0
    if not int_token(buf, rule_s, rule_e):
        return UNKNOWN_RULE, 0, 0
    room, key = _rule_key(buf, rule_s, rule_e, bigs)
    if not room:
        return TABLE_FULL, 0, 0
    r = find_id(rule_ids, key)
    if r < 0 or out.rule_graphs[r] != sizes[_GRAPHS]:
        return UNKNOWN_RULE, 0, 0
    return _copy_target(out.rule_tokens, out.rule_starts[r], out.rule_ends[r], out.target, g0, arity)


@_inline  # inlined into the loop over an edge list: a call per edge, passing every array, cost ~10 %
def _edge(buf, s, n, number, head, out, words, names, rule_ids, bigs):  # pragma: no cover - compiled
    """One edge object of an ``"edges"`` list into the edge arrays, in one pass whatever the order of its
    keys (the last of a repeated key counts). A reader checks the tails, then the features, then the rule;
    so the problem of each is kept and the first in that order goes to ``out.deferred``. Returns ``(code,
    end of the object)`` (code 0: none, < 0: a restart)."""
    sizes, d, start = out.sizes, out.deferred, out.sizes[_START]
    if buf[s] != 123:
        return fail(d, EDGE_NOT_OBJECT, s, s, head, number, at=start), skip(buf, s)
    arity = count = tail_start = tail_end = pair_start = pair_end = pair_a = pair_b = 0
    tails = feats = 0  # the problem of the "tail" and of the "feats" value (0: none)
    flagged = sizes[_FLAGGED]
    rule_s = rule_e = -1
    i, end = open_container(buf, s, n)
    while i >= 0:
        key_end = skip_string(buf, i)
        vs = ws(buf, ws(buf, key_end, n) + 1, n)
        escaped = has_backslash(buf, i, key_end)
        ve = -1
        if key_is(buf, i, key_end, escaped, _K_TAIL):
            tails, tail_start, tail_end, arity, ve = _tail_list(buf, vs, n, head, out.tails, sizes[_TAILS])
        elif key_is(buf, i, key_end, escaped, _K_FEATS):
            sizes[_FLAGGED] = flagged
            feats, pair_start, pair_end, pair_a, pair_b, count, ve = _feat_list(buf, vs, n, out, names)
            if feats == TABLE_FULL:
                return feats, 0
        elif key_is(buf, i, key_end, escaped, _K_RULE):
            rule_s = vs
            rule_e = ve = skip(buf, vs)
        if ve < 0:
            ve = skip(buf, vs)
        i, end = after_item(buf, ve, n)
    if tails:
        return fail(d, tails, tail_start, tail_end, head, number, at=start), end
    if feats == FEATS_SHAPE:
        return fail(d, feats, s, s, head, number, at=start), end
    if feats:
        return fail(d, feats, pair_start, pair_end, head, number, pair_a, pair_b, at=start), end
    code, length, k = _edge_target(buf, rule_s, rule_e, arity, out, words, rule_ids, bigs)
    if code < 0:
        return code, 0
    if code:
        return fail(d, code, rule_s, rule_e, head, number, k, arity, at=start), end
    edge = sizes[_EDGES]
    out.head[edge], out.arity[edge], out.target_lengths[edge], out.feature_counts[edge] = head, arity, length, count
    sizes[_EDGES] += 1
    sizes[_TAILS] += arity
    sizes[_TARGET] += length
    sizes[_FEATURES] += count
    return 0, end


@uncounted_jit
def _read_edges(buf, vs, n, out, words, names, rule_ids, bigs):  # pragma: no cover - compiled
    """The edges of the (checked) list at ``buf[vs]``, for the next node (the first bad one's error waits
    in ``out.deferred`` for the node); an object lists its members, none of them an edge."""
    sizes = out.sizes
    node = sizes[_NODE]
    out.deferred[0] = 0
    if buf[vs] == 123:
        count, first, _ = count_items(buf, vs, n)
        if count:
            fail(out.deferred, EDGE_NOT_OBJECT, first, first, node, sizes[_NEXT_EDGE], at=sizes[_START])
        sizes[_PENDING] = count
        return 0
    count = 0
    i = first_item(buf, vs, n)
    while i >= 0:
        if out.deferred[0] == 0:
            code, e = _edge(buf, i, n, sizes[_NEXT_EDGE] + count, node, out, words, names, rule_ids, bigs)
            if code < 0:
                return code
        else:
            e = skip(buf, i)
        count += 1
        i = next_item(buf, e, n)
    sizes[_PENDING] = count
    return 0


@_inline
def _edges(buf, vs, n, out, words, names, rule_ids, bigs):  # pragma: no cover - compiled
    """An ``"edges"`` value: the edges of the next node, read now (and again at the node if ``"rules"`` or
    ``"features"`` change before it)."""
    sizes = out.sizes
    if buf[vs] != 91 and buf[vs] != 123:
        return fail(out.error, EDGES_TYPE, vs, vs, sizes[_NODE], at=sizes[_START])
    if sizes[_PENDING] > 0:
        return fail(out.error, TWO_EDGES, vs, vs, sizes[_NODE], at=sizes[_START])
    for k in range(5):
        sizes[_SAVED + k] = sizes[_EDGES + k]
    sizes[_PENDING_AT], sizes[_STALE] = vs, 0
    return _read_edges(buf, vs, n, out, words, names, rule_ids, bigs)


# ---------------------------------------------------------------------- nodes and objects


@_inline
def _in_edges_match(buf, s, n, pending, first):  # pragma: no cover - compiled
    """Whether the ``in_edges`` value at ``buf[s]`` (-1: none, which is ``[]``) equals the list of the
    ``pending`` edge numbers from ``first`` as Python compares json's value with it."""
    if s < 0:
        return pending == 0
    if buf[s] == 123:  # json's ordered pairs: a list, equal only when both are empty
        return pending == 0 and count_items(buf, s, n)[0] == 0
    if buf[s] != 91:
        return False
    count = 0
    j = first_item(buf, s, n)
    while j >= 0:
        je = skip(buf, j)
        if count >= pending or not equals_integer(buf, j, je, first + count):
            return False
        count += 1
        j = next_item(buf, je, n)
    return count == pending


@uncounted_jit
def _node(buf, vs, n, out, words, names, labels, rule_ids, bigs):  # pragma: no cover - compiled
    """A ``"node"`` value: its ``in_edges`` must list the edges given before it; then those edges' first
    error, if any; a node without edges gets an axiom edge."""
    sizes = out.sizes
    node = sizes[_NODE]
    start = sizes[_START]
    if buf[vs] != 123:
        return fail(out.error, NODE_TYPE, vs, vs, node, at=start)
    in_s = in_e = cat_s = cat_e = -1
    i = first_item(buf, vs, n)
    while i >= 0:
        key_end = skip_string(buf, i)
        s = ws(buf, ws(buf, key_end, n) + 1, n)
        e = skip(buf, s)
        escaped = has_backslash(buf, i, key_end)
        if key_is(buf, i, key_end, escaped, _K_IN_EDGES):
            in_s, in_e = s, e
        elif key_is(buf, i, key_end, escaped, _K_CAT):
            cat_s, cat_e = s, e
        i = next_item(buf, e, n)
    pending = sizes[_PENDING]
    if not _in_edges_match(buf, in_s, n, pending, sizes[_NEXT_EDGE]):
        return fail(out.error, IN_EDGES, in_s, in_e, node, 0, pending, sizes[_NEXT_EDGE], at=start)
    if sizes[_STALE]:  # "rules" or "features" changed since the edges were read: read them again
        for k in range(5):
            sizes[_EDGES + k] = sizes[_SAVED + k]
        code = _read_edges(buf, sizes[_PENDING_AT], n, out, words, names, rule_ids, bigs)
        if code < 0:
            return code
        sizes[_STALE] = 0
    if out.deferred[0] != 0:
        for k in range(out.error.size):  # (a slice copy would allocate)
            out.error[k] = out.deferred[k]
        return out.deferred[0]
    if pending == 0:  # an axiom edge
        edge = sizes[_EDGES]
        out.head[edge], out.arity[edge], out.target_lengths[edge], out.feature_counts[edge] = node, 0, 0, 0
        sizes[_EDGES] += 1
        sizes[_AXIOMS] += 1
    sizes[_NEXT_EDGE] += pending
    sizes[_PENDING] = 0
    label = -1
    if cat_s >= 0 and buf[cat_s] == 34:
        a, b = string_text(buf, cat_s, cat_e, out.cursor)
        label = intern(labels, buf, a, b)
        if label < 0:
            return TABLE_FULL
    out.labels[sizes[_NODES]] = label
    sizes[_NODES] += 1
    sizes[_NODE] += 1
    return 0


@_inline  # (every call passes all the arrays: the calls of an object's members are the ones that remain)
def _member(buf, i, key_end, vs, n, out, words, names, labels, rule_ids, bigs):  # pragma: no cover - compiled
    """The (checked) value at ``buf[vs]`` of the object member whose key is ``buf[i:key_end]``, read by its
    key. Returns an error or restart code (0: none)."""
    sizes = out.sizes
    escaped = has_backslash(buf, i, key_end)
    if key_is(buf, i, key_end, escaped, _K_EDGES):
        return _edges(buf, vs, n, out, words, names, rule_ids, bigs)
    if key_is(buf, i, key_end, escaped, _K_NODE):
        return _node(buf, vs, n, out, words, names, labels, rule_ids, bigs)
    if key_is(buf, i, key_end, escaped, _K_RULES):
        code = _rules(buf, vs, n, out, words, rule_ids, bigs)
    elif key_is(buf, i, key_end, escaped, _K_FEATURES):
        code = _features(buf, vs, n, out, names)
    else:
        return 0
    if sizes[_PENDING] > 0:
        sizes[_STALE] = 1
    return code


@uncounted_jit
def _object(buf, start, n, out, words, names, labels, rule_ids, bigs):  # pragma: no cover - compiled
    """One graph's object at ``buf[start] == '{'``: each member's value checked as JSON, then read by its
    key in order. Returns ``(code, end)``."""
    sizes = out.sizes
    sizes[_START], sizes[_NAMES], sizes[_NEXT_EDGE], sizes[_PENDING], sizes[_NODE], sizes[_AXIOMS] = (
        start, -1, 0, 0, 0, 0)  # fmt: skip
    sizes[_STALE] = 0
    out.deferred[0] = 0
    i = ws(buf, start + 1, n)
    if i < n and buf[i] == 125:
        i += 1
    else:
        while True:
            key_end = string_end(buf, i, n) if i < n and buf[i] == 34 else -1
            j = ws(buf, key_end, n) if key_end >= 0 else i
            if key_end < 0 or j >= n or buf[j] != 58:
                return fail(out.error, SYNTAX, j, j, at=start), i
            vs = ws(buf, j + 1, n)
            ve = skip_value(buf, vs, n, out.stack)
            if ve == NOT_JSON:
                return fail(out.error, SYNTAX, vs, vs, at=start), i
            if ve == HUGE_INTEGER:
                return fail(out.error, HUGE, vs, vs, at=start), i
            code = _member(buf, i, key_end, vs, n, out, words, names, labels, rule_ids, bigs)
            if code != 0:
                return code, i
            i = ws(buf, ve, n)
            if i < n and buf[i] == 125:
                i += 1
                break
            if i >= n or buf[i] != 44:
                return fail(out.error, SYNTAX, i, i, at=start), i
            i = ws(buf, i + 1, n)
    if sizes[_PENDING] > 0:
        return fail(out.error, EDGES_AFTER, start, start, 0, 0, sizes[_PENDING], at=start), i
    if sizes[_NODE] == 0:
        return fail(out.error, NO_NODES, start, start, at=start), i
    g = sizes[_GRAPHS]
    out.graphs[g, 0], out.graphs[g, 1], out.graphs[g, 2], out.graphs[g, 3] = (
        sizes[_NODES], sizes[_EDGES], sizes[_AXIOMS], start)  # fmt: skip
    sizes[_GRAPHS] += 1
    return 0, i


@uncounted_jit
def scan(buf, n, out, words, names, labels, rule_ids, bigs):  # pragma: no cover - compiled
    """The objects of the file ``buf[:n]`` one after another (whitespace as ``str.split()`` sees it between
    them). Stops at the first error (``out.error``), at text that is not an object (code ``TOP``) or with a
    restart code."""
    pos = 0
    while True:
        while pos < n:
            width = space_width(buf, pos)
            if width == 0:
                break
            pos += width
        if pos >= n:
            break
        if buf[pos] != 123:
            return fail(out.error, TOP, pos, pos)
        code, pos = _object(buf, pos, n, out, words, names, labels, rule_ids, bigs)
        if code != 0:
            return code
    if out.sizes[_GRAPHS] == 0:
        return fail(out.error, NO_GRAPH, n, n)
    return 0


@_jit
def bounds(raw):  # pragma: no cover - compiled
    """Upper bounds on the values (array items and object members: one per ``,``, ``:`` or ``[``) and on
    the objects (one per ``{``) of a file, plus one."""
    values = objects = 1
    for c in raw:
        if c == 44 or c == 58 or c == 91:
            values += 1
        elif c == 123:
            objects += 1
    return values, objects
