"""toy_wmt's oracle: both sides of a sentence tree (toy_grammar), source SVO, target V2 /
verb-final with gender, case and agreement (see toy_wmt.py for examples).

    translate(lexicon, tree) -> (source string, target string)
"""

from anatomy.data import lexicon as lx

REL_DAT = {"m": "dem", "f": "der", "n": "dem", "pl": "denen"}


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
