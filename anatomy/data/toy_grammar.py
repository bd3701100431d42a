"""toy_wmt's sentence trees and the grower that builds them (see toy_wmt.py for the grammar).

Grower(lexicon, rng).sentence(target_length) -> (tree, source tokens): a tree of Clause /
NP / RC nodes grown at random, one expansion at a time, until its source reaches the length.
toy_oracle.translate reads both sides off the tree (the grower measures the source with it).
"""

from anatomy.data import lexicon as lx
from anatomy.data.toy_oracle import src_clause, src_np, src_rc, src_sentence


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
