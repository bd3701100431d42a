"""toy_wmt: a seeded English-like -> German-like translation task with an exact oracle.

A sentence is a tree grown at random until its source reaches a drawn length; both sides are
read off the same tree, so the oracle translation is exact and every error is the model's.

Source (English-like, SVO)                  Target (German-like)
  the man sees the dog .                      der Mann sieht den Hund .
  today the man sees the dog .                heute sieht der Mann den Hund .      (verb second)
  the man has seen the dog .                  der Mann hat den Hund gesehen .      (verb bracket)
  the man says that the dog sees the cat .    der Mann sagt , dass der Hund die Katze sieht .
                                                                                   (verb final)
  the man who sees the dogs runs .            der Mann , der die Hunde sieht , läuft .
                                              (the verb agrees with 'man' across the clause)
  because dogs run , the man sleeps .         weil Hunde laufen , schläft der Mann .
Content words are pseudo-words from `lexicon.py`; separable verbs split in main clauses
(ruft ... an / anruft), compounds fuse, articles and adjective endings follow gender and case.

Grammar (the source side; every construction is recursive through NPs and clauses):
  S      -> MAIN ( ', and' | ', but' | ', or' MAIN )*        (at most 3 main clauses)
  MAIN   -> [ADV | PP ',' | SUB ','] CLAUSE                  (one fronted element: V2 inversion)
  CLAUSE -> NP [ADV] VG (NP | 'that' CLAUSE | -) [SUB]       (SUB only in main/that-clauses)
  SUB    -> ('because' | 'when' | ...) CLAUSE
  NP     -> [DET] ADJ* NOUN [PP | RC] | BARE 'and' BARE      (coordination makes it plural)
  RC     -> 'who' [ADV] VG [NP] | 'who' BARE [ADV] VG         (subject / object relative)
  VG     -> VERB | ('has'|'have') PARTICIPLE
The restrictions (bare coordinands, one post-modifier per noun, commas before fronted main
clauses' subjects) keep the source unambiguous, so a perfect translation exists.
"""

import random

from anatomy.data import lexicon as lx
from anatomy.errors import BadInputError

LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, None))
DEFAULT_LENGTH_WEIGHTS = (0.14, 0.18, 0.18, 0.16, 0.12, 0.10, 0.12)
REL_DAT = {"m": "dem", "f": "der", "n": "dem", "pl": "denen"}


def length_bucket(n):
    """Index into LENGTH_BUCKETS of a source with n tokens."""
    for i, (_, hi) in enumerate(LENGTH_BUCKETS):
        if hi is None or n <= hi:
            return i
    return len(LENGTH_BUCKETS) - 1


def bucket_label(lo, hi):
    """'1-10', ..., '61+'."""
    return f"{lo}+" if hi is None else f"{lo}-{hi}"


class NP:
    __slots__ = ("noun", "number", "det", "adjs", "post", "conj", "can_post", "can_coord")

    def agr(self):
        """Agreement number: coordinated NPs are plural."""
        return "pl" if self.conj is not None else self.number


class Clause:
    __slots__ = ("kind", "subj", "verb", "perfect", "adv", "obj", "comp", "front", "post", "depth")


class RC:
    __slots__ = ("kind", "verb", "perfect", "adv", "obj", "subj")


class Grower:
    """Grows one random sentence tree; every expansion returns the source tokens it added."""

    def __init__(self, lex, rng):
        self.lex, self.rng = lex, rng
        self.trans, self.intr, self.say = (
            lex.by_kind("trans"),
            lex.by_kind("intr"),
            lex.by_kind("say"),
        )
        self.nodes = []

    # ---- constructors ----
    def np(self, can_post=True, can_coord=True):
        r, n = self.rng, NP()
        n.noun = r.randrange(len(self.lex.nouns))
        n.number = "sg" if r.random() < 0.6 else "pl"
        u = r.random()
        if n.number == "sg":
            n.det = "def" if u < 0.6 else ("indef" if u < 0.9 else "neg")
        else:
            n.det = "def" if u < 0.5 else ("none" if u < 0.9 else "neg")
        n.adjs, n.post, n.conj, n.can_post, n.can_coord = [], None, None, can_post, can_coord
        self.nodes.append(n)
        return n

    def clause(self, kind, depth):
        r, c = self.rng, Clause()
        c.kind, c.depth, c.perfect, c.adv, c.front, c.post, c.obj, c.comp = (
            kind,
            depth,
            False,
            None,
            None,
            None,
            None,
            None,
        )
        c.subj = self.np()
        u = r.random()
        if u < 0.12 and depth < 3:
            c.verb = r.choice(self.say)
            c.comp = self.clause("comp", depth + 1)
        elif u < 0.65:
            c.verb = r.choice(self.trans)
            c.obj = self.np()
        else:
            c.verb = r.choice(self.intr)
        self.nodes.append(c)
        return c

    def rc(self):
        r, x = self.rng, RC()
        x.perfect, x.adv, x.obj, x.subj = False, None, None, None
        x.kind = "subj" if r.random() < 0.6 else "obj"
        if x.kind == "subj":
            x.verb = r.choice(self.trans) if r.random() < 0.6 else r.choice(self.intr)
            if self.lex.verbs[x.verb]["kind"] == "trans":
                x.obj = self.np()
        else:
            x.verb = r.choice(self.trans)
            x.subj = self.np(can_post=False, can_coord=False)
        self.nodes.append(x)
        return x

    # ---- expansions: return added source tokens, or 0 if not applicable ----
    def expand(self, node, sentence):
        r = self.rng
        if isinstance(node, NP):
            ops = []
            if len(node.adjs) < 2:
                ops.append("adj")
            if node.can_post and node.post is None and node.conj is None:
                ops += ["pp", "rc", "rc"]
            if node.can_coord and node.post is None and node.conj is None:
                ops.append("coord")
            if not ops:
                return 0
            op = r.choice(ops)
            if op == "adj":
                a = r.randrange(len(self.lex.adjectives))
                if a in node.adjs:
                    return 0 if len(self.lex.adjectives) < 2 else self.expand(node, sentence)
                node.adjs.append(a)
                return 1
            if op == "pp":
                node.post = ("pp", r.randrange(len(self.lex.prepositions)), self.np())
                return 1 + len(src_np(self.lex, node.post[2]))
            if op == "rc":
                node.post = ("rc", self.rc())
                return len(src_rc(self.lex, node.post[1], node.agr()))
            node.conj = self.np(can_post=False, can_coord=False)
            return 1 + len(src_np(self.lex, node.conj))
        if isinstance(node, RC):
            ops = [
                o for o, free in (("adv", node.adv is None), ("perfect", not node.perfect)) if free
            ]
            if not ops:
                return 0
            if r.choice(ops) == "adv":
                node.adv = r.randrange(len(self.lex.adverbs))
            else:
                node.perfect = True
            return 1
        if isinstance(node, Clause):
            ops = [
                o
                for o, free in (
                    ("adv", node.adv is None),
                    ("perfect", not node.perfect),
                    ("front", node.kind == "main" and node.front is None),
                    (
                        "post",
                        node.kind in ("main", "comp") and node.post is None and node.depth < 4,
                    ),
                )
                if free
            ]
            if not ops:
                return 0
            op = r.choice(ops)
            if op == "adv":
                node.adv = r.randrange(len(self.lex.adverbs))
                return 1
            if op == "perfect":
                node.perfect = True
                return 1
            if op == "post":
                node.post = (r.choice(tuple(lx.SUBORDINATORS)), self.clause("adv", node.depth + 1))
                return 1 + len(src_clause(self.lex, node.post[1]))
            u = r.random()
            if u < 0.4:
                node.front = ("adv", r.randrange(len(self.lex.adverbs)))
                return 1
            if u < 0.7:
                node.front = ("pp", r.randrange(len(self.lex.prepositions)), self.np())
                return 2 + len(src_np(self.lex, node.front[2]))
            node.front = (
                "sub",
                r.choice(tuple(lx.SUBORDINATORS)),
                self.clause("adv", node.depth + 1),
            )
            return 2 + len(src_clause(self.lex, node.front[2]))
        # the sentence itself: coordinate another main clause
        if len(sentence) >= 3:
            return 0
        c = self.clause("main", 0)
        sentence.append((r.choice(tuple(lx.COORDINATORS)), c))
        return 2 + len(src_clause(self.lex, c))

    def sentence(self, target_len):
        """Grow a sentence [(conj, main clause), ...] until its source has >= target_len tokens."""
        self.nodes = []
        sentence = [(None, self.clause("main", 0))]
        self.nodes.append(sentence)
        n = len(src_sentence(self.lex, sentence))
        while n < target_len and self.nodes:
            i = self.rng.randrange(len(self.nodes))
            added = self.expand(self.nodes[i], sentence)
            if added == 0:
                self.nodes[i] = self.nodes[-1]
                self.nodes.pop()
            n += added
        return sentence, n


# ---- source linearisation ----


def src_np(lex, n):
    out = [] if n.det == "none" else [{"def": "the", "indef": "a", "neg": "no"}[n.det]]
    out += [lex.adjectives[a]["src"] for a in n.adjs]
    noun = lex.nouns[n.noun]
    out += (noun["src"] if n.number == "sg" else noun["src_pl"]).split()
    if n.conj is not None:
        out += ["and"] + src_np(lex, n.conj)
    if n.post is not None:
        if n.post[0] == "pp":
            out += [lex.prepositions[n.post[1]]["src"]] + src_np(lex, n.post[2])
        else:
            out += src_rc(lex, n.post[1], n.agr())
    return out


def src_vg(lex, verb, perfect, agr, adv):
    v = lex.verbs[verb]
    out = [] if adv is None else [lex.adverbs[adv]["src"]]
    if perfect:
        return out + ["has" if agr == "sg" else "have", v["src_part"]]
    return out + [v["src_3sg"] if agr == "sg" else v["src"]]


def src_rc(lex, x, antecedent_agr):
    if x.kind == "subj":
        out = ["who"] + src_vg(lex, x.verb, x.perfect, antecedent_agr, x.adv)
        return out + (src_np(lex, x.obj) if x.obj is not None else [])
    return ["who"] + src_np(lex, x.subj) + src_vg(lex, x.verb, x.perfect, x.subj.agr(), x.adv)


def src_clause(lex, c):
    out = []
    if c.front is not None:
        if c.front[0] == "adv":
            out.append(lex.adverbs[c.front[1]]["src"])
        elif c.front[0] == "pp":
            out += [lex.prepositions[c.front[1]]["src"]] + src_np(lex, c.front[2]) + [","]
        else:
            out += [c.front[1]] + src_clause(lex, c.front[2]) + [","]
    out += src_np(lex, c.subj) + src_vg(lex, c.verb, c.perfect, c.subj.agr(), c.adv)
    if c.obj is not None:
        out += src_np(lex, c.obj)
    if c.comp is not None:
        out += ["that"] + src_clause(lex, c.comp)
    if c.post is not None:
        out += [c.post[0]] + src_clause(lex, c.post[1])
    return out


def src_sentence(lex, sentence):
    out = []
    for conj, c in sentence:
        if conj is not None:
            out += [",", conj]
        out += src_clause(lex, c)
    return out + ["."]


# ---- target linearisation (the oracle) ----


def tgt_np(lex, n, case):
    noun = lex.nouns[n.noun]
    gg = noun["gender"] if n.number == "sg" else "pl"
    det = lx.determiner(n.det, case, gg)
    out = [] if det is None else [det]
    ending = lx.adjective_ending(n.det, case, gg)
    out += [lex.adjectives[a]["tgt"] + ending for a in n.adjs]
    out.append(lx.noun_form(noun, n.number, case))
    if n.conj is not None:
        out += ["und"] + tgt_np(lex, n.conj, case)
    if n.post is not None:
        if n.post[0] == "pp":
            p = lex.prepositions[n.post[1]]
            out += [p["tgt"]] + tgt_np(lex, n.post[2], p["case"])
        else:
            out += [","] + tgt_rc(lex, n.post[1], gg, n.agr()) + [","]
    return out


def verb_final(lex, verb, perfect, agr):
    """The verb cluster at the end of a subordinate or relative clause."""
    v = lex.verbs[verb]
    if perfect:
        return [lx.participle(v), lx.auxiliary(v, agr)]
    return [v["particle"] + lx.finite_form(v, agr)]


def obj_case(lex, verb):
    return "dat" if lex.verbs[verb]["dative"] else "acc"


def tgt_rc(lex, x, gg, agr):
    adv = [] if x.adv is None else [lex.adverbs[x.adv]["tgt"]]
    if x.kind == "subj":
        out = [lx.REL[("nom", gg)]] + adv
        if x.obj is not None:
            out += tgt_np(lex, x.obj, obj_case(lex, x.verb))
        return out + verb_final(lex, x.verb, x.perfect, agr)
    case = obj_case(lex, x.verb)
    rel = REL_DAT[gg] if case == "dat" else lx.REL[("acc", gg)]
    return (
        [rel] + tgt_np(lex, x.subj, "nom") + adv + verb_final(lex, x.verb, x.perfect, x.subj.agr())
    )


def _middle(lex, c):
    out = [] if c.adv is None else [lex.adverbs[c.adv]["tgt"]]
    return out + (tgt_np(lex, c.obj, obj_case(lex, c.verb)) if c.obj is not None else [])


def _extraposed(lex, c):
    out = []
    if c.comp is not None:
        out += [",", "dass"] + tgt_sub(lex, c.comp)
    if c.post is not None:
        out += [",", lx.SUBORDINATORS[c.post[0]]] + tgt_sub(lex, c.post[1])
    return out


def tgt_sub(lex, c):
    """Subordinate clause: verb final."""
    return (
        tgt_np(lex, c.subj, "nom")
        + _middle(lex, c)
        + verb_final(lex, c.verb, c.perfect, c.subj.agr())
        + _extraposed(lex, c)
    )


def tgt_main(lex, c):
    """Main clause: the finite verb is second; participle or particle closes the clause."""
    v, agr = lex.verbs[c.verb], c.subj.agr()
    finite = lx.auxiliary(v, agr) if c.perfect else lx.finite_form(v, agr)
    end = [lx.participle(v)] if c.perfect else ([v["particle"]] if v["particle"] else [])
    subj = tgt_np(lex, c.subj, "nom")
    if c.front is None:
        head = subj + [finite]
    else:
        if c.front[0] == "adv":
            front = [lex.adverbs[c.front[1]]["tgt"]]
        elif c.front[0] == "pp":
            p = lex.prepositions[c.front[1]]
            front = [p["tgt"]] + tgt_np(lex, c.front[2], p["case"])
        else:
            front = [lx.SUBORDINATORS[c.front[1]]] + tgt_sub(lex, c.front[2]) + [","]
        head = front + [finite] + subj
    return head + _middle(lex, c) + end + _extraposed(lex, c)


def tgt_sentence(lex, sentence):
    out = []
    for conj, c in sentence:
        if conj is not None:
            out += [","] if conj == "but" else []
            out.append(lx.COORDINATORS[conj])
        out += tgt_main(lex, c)
    out.append(".")
    clean = []
    for tok in out:  # German commas: no doubles, none before a full stop
        if tok == "," and clean and clean[-1] == ",":
            continue
        if tok == "." and clean and clean[-1] == ",":
            clean.pop()
        clean.append(tok)
    return clean


def translate(lex, sentence):
    """The oracle: (source string, target string) of one sentence tree."""
    return " ".join(src_sentence(lex, sentence)), " ".join(tgt_sentence(lex, sentence))


# ---- corpora ----


def _target_length(rng, bucket, max_src_len):
    lo, hi = LENGTH_BUCKETS[bucket]
    hi = max_src_len if hi is None else min(hi, max_src_len)
    return rng.randint(lo, max(lo, hi))


def generate_pairs(
    n,
    *,
    seed,
    lexicon,
    length_weights=DEFAULT_LENGTH_WEIGHTS,
    max_src_len=120,
    exclude=frozenset(),
    stream="train",
):
    """n (source, target) string pairs whose source lengths follow length_weights.

    length_weights: one weight per LENGTH_BUCKETS entry; a target length is drawn uniformly
    inside a drawn bucket (61+ means 61..max_src_len) and the tree grows until it reaches it.
    Sources in `exclude` are skipped (keeps splits disjoint). Deterministic in (seed, stream).
    """
    if len(length_weights) != len(LENGTH_BUCKETS):
        raise BadInputError(
            f"length_weights needs {len(LENGTH_BUCKETS)} entries, got {len(length_weights)}"
        )
    rng = random.Random(f"toy_wmt/{seed}/{stream}")
    grower, out = Grower(lexicon, rng), []
    buckets = range(len(LENGTH_BUCKETS))
    while len(out) < n:
        b = rng.choices(buckets, weights=length_weights)[0]
        tree, length = grower.sentence(_target_length(rng, b, max_src_len))
        if length > max_src_len:
            continue
        pair = translate(lexicon, tree)
        if pair[0] not in exclude:
            out.append(pair)
    return out


def generate_stratified(
    per_bucket, *, seed, lexicon, max_src_len=120, exclude=frozenset(), stream="test"
):
    """per_bucket pairs in every LENGTH_BUCKETS bucket (by source tokens), distinct sources."""
    rng = random.Random(f"toy_wmt/{seed}/{stream}")
    grower = Grower(lexicon, rng)
    filled = [[] for _ in LENGTH_BUCKETS]
    seen = set(exclude)
    for b in range(len(LENGTH_BUCKETS)):
        if LENGTH_BUCKETS[b][0] > max_src_len:
            raise BadInputError(
                f"max_src_len={max_src_len} leaves bucket {LENGTH_BUCKETS[b]} empty"
            )
        tries = 0
        while len(filled[b]) < per_bucket:
            tries += 1
            if tries > 200 * per_bucket + 1000:
                raise BadInputError(f"cannot fill length bucket {LENGTH_BUCKETS[b]}")
            tree, length = grower.sentence(_target_length(rng, b, max_src_len))
            got = length_bucket(length)
            if length > max_src_len or len(filled[got]) >= per_bucket:
                continue
            pair = translate(lexicon, tree)
            if pair[0] not in seen:
                seen.add(pair[0])
                filled[got].append(pair)
    return [p for bucket in filled for p in bucket]


def generate_splits(
    seed=0,
    train_size=30000,
    valid_size=1000,
    test_per_bucket=100,
    max_src_len=120,
    length_weights=DEFAULT_LENGTH_WEIGHTS,
    lexicon_scale=1.0,
    lexicon=None,
):
    """{'train', 'valid', 'test'} -> list of (source, target); test is stratified by length.

    The splits have disjoint sources (test first, then valid, then train). lexicon_scale
    sizes the generated lexicon (lexicon.make_lexicon's scale) unless a lexicon is given.
    """
    lex = lexicon if lexicon is not None else lx.make_lexicon(seed, scale=lexicon_scale)
    test = generate_stratified(test_per_bucket, seed=seed, lexicon=lex, max_src_len=max_src_len)
    seen = {s for s, _ in test}
    valid = generate_pairs(
        valid_size,
        seed=seed,
        lexicon=lex,
        length_weights=length_weights,
        max_src_len=max_src_len,
        exclude=seen,
        stream="valid",
    )
    seen |= {s for s, _ in valid}
    train = generate_pairs(
        train_size,
        seed=seed,
        lexicon=lex,
        length_weights=length_weights,
        max_src_len=max_src_len,
        exclude=seen,
        stream="train",
    )
    return {"train": train, "valid": valid, "test": test}
