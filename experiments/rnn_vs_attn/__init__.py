"""rnn_vs_attn: the fixed-vector bottleneck, measured (docs/chapter.md, claim 2; Bahdanau Fig. 2).

Trains RNNenc (LSTM encoder-decoder, no attention), RNNsearch (bi-LSTM + additive attention)
and the Transformer on the same corpus with the same token budget, each in workdir/<model>/
(own checkpoints: a rerun resumes per model), then decodes the test split greedily and scores
it with sacrebleu overall and per source-length bucket: the training every translating
experiment shares, experiments/tasks/translation. Writes results.json, report.md and
bleu_by_length.png, loss_vs_steps.png, loss_vs_time.png, valid_loss.png,
valid_loss_vs_time.png, attention_<model>.png (plots.py). One model's training and scoring:
experiments/tasks/translation/training.py; the mean and std over seeds and the tables: its
seeds.py; the chapter's claims (bottleneck, quality and cost, equal time), judged on
results.json: claims.py. With config.cost_estimate (the paper-scale presets) the predicted
memory, step time and hours of the run are printed before the corpus is read and kept in
results.json: experiments/tasks/translation/cost.py.

Seeds: with config.seeds = S > 1 every model trains S times, seed s > 0 in workdir/<model>/seed<s>/
with train.seed + s (the data and its order unchanged, so seed 0 is the one-seed run);
results.json keeps every seed's row and the mean and std (seeds.aggregate).
A model named `<model>-N` (e.g. rnnsearch-30) trains only on pairs with at most N source
tokens (data.train_max_src_len) and is tested on every length: Bahdanau et al.'s protocol.
Validation: teacher-forced loss/accuracy on config.eval.valid_batches fixed valid batches every
config.train.eval_every steps (anatomy.train.make_validate), outside the training clock.
"""

from __future__ import annotations

from anatomy import data, distributed
from experiments.rnn_vs_attn import plots
from experiments.tasks import translation


def run(config, workdir):
    """Train and evaluate config.models (each config.seeds times: experiments/tasks/translation);
    write results.json, report.md and plots; return {'models': name -> aggregated entry,
    'setup': ...}."""
    results = translation.train(config, workdir)
    if distributed.is_coordinator():
        labels = [data.bucket_label(lo, hi) for lo, hi in data.LENGTH_BUCKETS]
        plots.write_outputs(config, workdir, results["models"], labels, results["setup"])
    return results
