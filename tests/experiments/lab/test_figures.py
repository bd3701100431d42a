"""Every figure says where it comes from and fits its words: experiments.lab.outputs.save_plot
stamps a visible footer (the result file, its commit, the machine and its load) and wraps a
title the figure's edge or a neighbouring panel would cut; experiments.lab.style names the corpus
a translation plot is of."""

import pytest

from experiments.lab import outputs, style

PROV = {
    "commit": "8a41399" + "0" * 33,
    "dirty": False,
    "cpus": 2,
    "cpu": {"model": "AMD EPYC", "isa": "AVX512", "xla_flags": ""},
    "device_kind": "cpu x1",
    "loadavg": [1.19, 1.0, 1.0],
    "loadavg_after": [5.09, 3.0, 2.0],
}


def _footer(fig):
    (text,) = [t.get_text() for t in fig.texts]
    return text.replace("\n", " ")


def _renderer(fig):
    """A renderer for a figure save_plot closed (closing drops its Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return FigureCanvasAgg(fig).get_renderer()


def _inside(fig, artist):
    box = artist.get_window_extent(_renderer(fig))
    return fig.bbox.x0 - 0.5 <= box.x0 and box.x1 <= fig.bbox.x1 + 0.5


def test_a_committed_plot_names_its_result_commit_machine_and_load(tmp_path):
    fig, ax = outputs.new_figure(figsize=(6, 4))
    ax.plot([0, 1], [0, 1])
    with outputs.stamping("rnn_vs_attn/seeds", {"setup": {"provenance": PROV}}):
        outputs.save_plot(fig, str(tmp_path), "p.png")
    assert _footer(fig) == (
        "results/rnn_vs_attn/seeds.json · commit 8a41399 · 2 cores, AMD EPYC (AVX512) · "
        "1-minute load 1.2 before, 5.1 after"
    )
    assert outputs.read_stamp(tmp_path / "p.png")[outputs.STAMP_KEYS[0]] == "rnn_vs_attn/seeds"


def test_a_runs_plot_names_its_workdir_and_the_load_when_drawn(tmp_path):
    fig, ax = outputs.new_figure(figsize=(6, 4))
    ax.plot([0, 1], [0, 1])
    outputs.save_plot(fig, str(tmp_path), "p.png")
    text = _footer(fig)
    assert text.startswith(f"{tmp_path}/results.json · ") and " cores" in text, text
    assert "when drawn" in text or "load not recorded" in text, text
    fig, ax = outputs.new_figure(figsize=(2, 2))  # narrow: the footer wraps, never cut
    outputs.save_plot(fig, str(tmp_path), "p.png")
    assert "\n" in fig.texts[0].get_text() and _inside(fig, fig.texts[0])


def test_footer_text_says_what_was_not_recorded():
    bare = outputs.footer_text("results/x/default.json", {"cpus": 2, "dirty": True})
    assert bare == (
        "results/x/default.json · no git commit recorded with uncommitted changes · 2 cores · "
        "load not recorded"
    )
    gpu = dict(PROV, device_kind="NVIDIA H100 80GB HBM3 x1", loadavg_after=None)
    assert outputs.footer_text("r.json", gpu, "when drawn").endswith(
        "2 cores, AMD EPYC (AVX512), NVIDIA H100 80GB HBM3 x1 · 1-minute load 1.2 when drawn"
    )


@pytest.mark.parametrize("panels", [1, 3])
def test_a_long_title_is_wrapped_to_fit_its_panel(tmp_path, panels):
    """valid_loss_vs_time's title ran off a 6-inch figure; a panel's title must not run into
    its neighbour's either."""
    title = (
        "validation loss (teacher-forced, unsmoothed) against training time; load 1.2 -> 5.1 "
        "on 2 cores, toy_wmt (invented language)"
    )
    fig, axes = outputs.new_figure(1, panels, figsize=(6 * panels, 4), squeeze=False)
    for ax in axes[0]:
        ax.plot([0, 1], [0, 1])
        ax.set_title(title, fontsize=9)
    fig.suptitle("a suptitle " * 30)
    outputs.save_plot(fig, str(tmp_path), "p.png")
    renderer = _renderer(fig)
    for ax in axes[0]:
        assert ax.title.get_text().replace("\n", " ") == title  # every word kept
        assert "\n" in ax.title.get_text() and _inside(fig, ax.title)
    boxes = sorted((ax.title.get_window_extent(renderer) for ax in axes[0]), key=lambda b: b.x0)
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))  # no two titles overlap
    assert _inside(fig, fig._suptitle)


def test_a_title_that_fits_is_left_alone(tmp_path):
    fig, ax = outputs.new_figure(figsize=(6, 4))
    ax.set_title("BLEU by source length")
    outputs.save_plot(fig, str(tmp_path), "p.png")
    assert ax.title.get_text() == "BLEU by source length"


def test_the_corpus_in_a_title():
    assert style.corpus_label({"name": "toy_wmt"}) == "toy_wmt (invented language)"
    gettext = {"name": "gettext", "gettext": {"lang": "fr"}}
    assert style.corpus_label(gettext) == "gettext en→fr (real text)"
    tsv = {"name": "tsv", "train_path": "/data/my_corpus.tsv"}
    assert style.corpus_label(tsv) == "my_corpus.tsv (your corpus)"
    assert style.corpus_label({}) == "corpus not recorded"
