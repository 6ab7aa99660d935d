#!/usr/bin/python3
"""A synthetic sentiment-tree dataset for models/treelstm.onnx, written as a
ragged .npz (numpy only; any python3 with numpy runs it).

Vocabulary: VOCAB words; word 0 and 1 are negators ("not", "never"), every
other word has a polarity from a seeded lexicon: 0 (half of the words),
+1, +2, -1 or -2. A sentence is 4..16 words (--min-len, --max-len) drawn at random (a negator with
probability 0.08), bracketed by a random binary tree (every split point
equally likely). Each node's score is that of its span: a leaf has its
word's polarity (0 for a negator); an internal node whose left child is a
negator leaf has minus the score of its right child; any other internal
node the sum of its children's scores. The node's label is the score's class:
  score <= -3 -> 0, -2..-1 -> 1, 0 -> 2, 1..2 -> 3, >= 3 -> 4
so the labels follow from the words and the tree: learnable, and only by a
model that composes along the tree (negation flips whole spans).

Arrays (int64; sample i of NAME is NAME[NAME_splits[i]:NAME_splits[i+1]],
the row_splits convention, NAME_splits of length ntrees + 1):
  words     [nodes]     word id of a leaf, -1 for an internal node
  children  [nodes, 2]  indices (within the tree) of the left and right child, -1 for none
  y         [nodes]     node labels 0..4
and words_test, children_test, y_test with their *_test_splits. Nodes are in
post-order (children before parents, the root last), as treelstm.onnx wants.

  python3 models/make_trees.py [-o trees.npz] [--train 2000] [--test 500] [--seed 7]
                               [--min-len 4] [--max-len 16]

Prints the majority-class rates (all nodes; roots only) of the test split.
Training the TreeLSTM on it, one tree a step (lantern's named-array feed:
words and children feed the inputs of those names, y the per-node labels):

  python3 models/make_trees.py -o trees.npz
  lantern train models/treelstm.onnx --data npz=trees.npz --optimizer adagrad --lr 0.05 \
      --batch 1 --epochs 1 -o treelstm-trained.onnx

(one epoch reached 0.992 test accuracy over the nodes against a majority
class of 0.393, and 0.930 on the roots against 0.258)."""
import argparse
import sys

import numpy as np

VOCAB = 200
SEED = 7
NEGATORS = (0, 1)
MIN_LEN, MAX_LEN = 4, 16


def lexicon(vocab=VOCAB, seed=SEED):
    """Polarity of every word (negators 0)."""
    rng = np.random.default_rng(seed)
    pol = rng.choice([0, 1, 2, -1, -2], size=vocab, p=[0.5, 0.15, 0.1, 0.15, 0.1]).astype(np.int64)
    pol[list(NEGATORS)] = 0
    return pol


def label(score):
    if score <= -3:
        return 0
    if score < 0:
        return 1
    if score == 0:
        return 2
    if score < 3:
        return 3
    return 4


def random_tree(rng, pol, length):
    """One sentence of `length` words under a random binary bracketing:
    (words, children, y) in post-order."""
    vocab = len(pol)
    sent = [int(rng.integers(0, len(NEGATORS))) if rng.random() < 0.08 else int(rng.integers(len(NEGATORS), vocab))
            for _ in range(length)]
    words, children, y, score = [], [], [], []

    def build(lo, hi):
        if hi - lo == 1:
            w = sent[lo]
            words.append(w)
            children.append((-1, -1))
            score.append(int(pol[w]))
        else:
            cut = int(rng.integers(lo + 1, hi))
            left = build(lo, cut)
            right = build(cut, hi)
            words.append(-1)
            children.append((left, right))
            neg = words[left] in NEGATORS
            score.append(-score[right] if neg else score[left] + score[right])
        y.append(label(score[-1]))
        return len(words) - 1

    build(0, length)
    return (np.array(words, np.int64), np.array(children, np.int64).reshape(-1, 2), np.array(y, np.int64))


def make_split(rng, pol, ntrees, min_len=MIN_LEN, max_len=MAX_LEN):
    trees = [random_tree(rng, pol, int(rng.integers(min_len, max_len + 1))) for _ in range(ntrees)]
    splits = np.zeros(ntrees + 1, np.int64)
    splits[1:] = np.cumsum([len(t[0]) for t in trees])
    cat = lambda k: np.concatenate([t[k] for t in trees])  # noqa: E731
    return cat(0), cat(1), cat(2), splits


def write(path, ntrain, ntest, seed=SEED, vocab=VOCAB, min_len=MIN_LEN, max_len=MAX_LEN):
    pol = lexicon(vocab, SEED)
    rng = np.random.default_rng(seed + 1)
    arrays = {}
    for suffix, n in (("", ntrain), ("_test", ntest)):
        if n == 0:
            continue
        w, c, y, s = make_split(rng, pol, n, min_len, max_len)
        arrays["words" + suffix], arrays["words" + suffix + "_splits"] = w, s
        arrays["children" + suffix], arrays["children" + suffix + "_splits"] = c, s.copy()
        arrays["y" + suffix], arrays["y" + suffix + "_splits"] = y, s.copy()
    np.savez(path, **arrays)
    return arrays


def majority(arrays):
    """Majority-class rate of the test split: over all nodes, over roots."""
    y, s = arrays["y_test"], arrays["y_test_splits"]
    counts = np.bincount(y, minlength=5)
    roots = y[s[1:] - 1]
    return counts.argmax(), counts.max() / len(y), np.bincount(roots, minlength=5).max() / len(roots)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", default="trees.npz")
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--test", type=int, default=500)
    ap.add_argument("--seed", type=int, default=SEED, help="of the trees (the lexicon stays the same)")
    ap.add_argument("--min-len", type=int, default=MIN_LEN)
    ap.add_argument("--max-len", type=int, default=MAX_LEN)
    a = ap.parse_args()
    if not 1 <= a.min_len <= a.max_len or a.train < 1 or a.test < 1:
        sys.exit("need 1 <= --min-len <= --max-len, --train >= 1 and --test >= 1")
    arr = write(a.out, a.train, a.test, a.seed, VOCAB, a.min_len, a.max_len)
    cls, all_rate, root_rate = majority(arr)
    print("wrote %s: %d training trees (%d nodes), %d test trees (%d nodes)" %
          (a.out, a.train, len(arr["y"]), a.test, len(arr["y_test"])))
    print("test split: majority class %d on %.4f of the nodes; the most frequent root class on %.4f of the roots" %
          (cls, all_rate, root_rate))
    print("test label counts: %s" % np.bincount(arr["y_test"], minlength=5).tolist())


if __name__ == "__main__":
    main()
