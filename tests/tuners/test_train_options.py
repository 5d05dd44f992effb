"""The batch and online trainers' options (hypertune/tuners/train_options.py): refusals in parameter names from
the library and in flags from ``hypertune train``/``pro``, whose flags are generated from the two classes."""

from __future__ import annotations

import argparse

import pytest
from support.paths import FIXTURES

from hypertune.cli import build_parser, main
from hypertune.errors import UsageError
from hypertune.tuners.train import Trainer
from hypertune.tuners.train_options import OnlineOptions, TrainOptions

TUNING = [str(FIXTURES / "mert" / "nbest.txt"), "--refs", str(FIXTURES / "mert" / "ref."), "--init",
          str(FIXTURES / "mert" / "init.weights")]  # fmt: skip


def test_the_batch_options_refuse_in_parameter_names():
    with pytest.raises(UsageError) as error:
        TrainOptions(l1=0.5, optimizer="lbfgs")
    assert str(error.value) == "l1 needs optimizer owlqn (L-BFGS cannot step across the kink of |w|)"
    with pytest.raises(UsageError) as error:
        Trainer(interpolate=0.0)
    assert str(error.value) == "interpolate must be in (0, 1], got 0.0"
    with pytest.raises(UsageError) as error:
        Trainer(loss="perceptron")  # a structured loss is the online trainer's
    assert str(error.value) == "loss must be one of pro, pl, ranking, mse, softmax, got 'perceptron'"


def test_a_trainer_takes_an_options_object_or_its_fields():
    options = TrainOptions(loss="pl", top_k=3)
    assert Trainer(options).options is options
    assert Trainer(options, seed=4).options == TrainOptions(loss="pl", top_k=3, seed=4)
    assert TrainOptions(l1=0.1).chosen_optimizer == "owlqn" and TrainOptions().chosen_optimizer == "lbfgs"
    assert OnlineOptions(loss="perceptron").chosen_optimizer == "perceptron"
    assert OnlineOptions(loss="ramp").chosen_optimizer == "sgd"
    assert OnlineOptions(loss="ramp").averaged and not OnlineOptions(loss="ramp", l1=0.1).averaged


def error_of(capsys: pytest.CaptureFixture, *argv: str) -> str:
    assert main(list(argv)) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--l1", "1", "--optimizer", "lbfgs"],
         "--l1 needs --optimizer owlqn (L-BFGS cannot step across the kink of |w|)"),
        (["--interpolate", "1.5"], "--interpolate must be in (0, 1], got 1.5"),
        (["--loss", "latent-svm", "--optimizer", "pa", "--minibatch", "4"],
         "--minibatch needs --optimizer perceptron, sgd or adagrad (pa steps one example)"),
        (["--loss", "ramp", "--target", "hope"], "--target is for the perceptron and latent-svm losses, not ramp"),
        (["--loss", "pl", "--optimizer", "sgd", "--cost-scale", "2"],
         "--cost-scale: for the structured losses, not pl"),
        (["--loss", "pro", "--epochs", "3", "--corpus-order"],
         "--epochs, --corpus-order: options of the online optimizers, but the pro loss runs with L-BFGS here (add "
         "--optimizer sgd, adagrad, ... to follow it online)"),
        (["--loss", "perceptron", "--iterations", "5", "--interpolate", "0.5"],
         "--interpolate, --iterations: options of L-BFGS, but the perceptron loss runs online here"),
        (["--loss", "ramp", "--optimizer", "owlqn"],
         "the ramp loss takes an online optimizer: perceptron, pa, arow, sgd, adagrad"),
    ],
)  # fmt: skip
def test_the_train_command_refuses_in_flags(options, message, capsys):
    assert error_of(capsys, "train", *TUNING, *options) == f"hypertune train: error: {message}"


def flags(command: str) -> dict[str, argparse.Action]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {a.option_strings[0]: a for a in sub._actions if a.option_strings}


def test_train_offers_both_trainers_flags_and_pro_the_batch_ones():
    train, pro = flags("train"), flags("pro")
    online = ["--epochs", "--learning-rate", "-C", "--arow-r", "--l1-method", "--minibatch", "--cost-scale",
              "--cccp-passes", "--corpus-order", "--target", "--no-average", "--select", "--prune-density"]  # fmt: skip
    batch = ["--loss", "--l2", "--l1", "--optimizer", "--top-k", "--sample", "--kbest", "--gain-smooth",
             "--acceptance", "--normalize", "--seed", "--interpolate", "--iterations"]  # fmt: skip
    assert set(batch + online) <= set(train)
    assert set(batch) - {"--loss"} <= set(pro) and not (set(online) | {"--loss"}) & set(pro)
    assert train["--optimizer"].choices == ("auto", "lbfgs", "owlqn", "perceptron", "pa", "arow", "sgd", "adagrad")
    assert pro["--optimizer"].choices == ("auto", "lbfgs", "owlqn")
    assert train["--loss"].choices == ("pro", "pl", "ranking", "mse", "softmax", "perceptron", "latent-svm", "ramp",
                                       "softmax-margin", "costmargin")  # fmt: skip
    assert train["--loss"].default == "pro" and train["--gain-smooth"].dest == "gain_smooth"
    assert (train["--no-average"].default, train["--corpus-order"].default) == (None, True)
