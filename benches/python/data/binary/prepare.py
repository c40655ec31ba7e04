"""Builds the binary tasks of this folder from their source files (run once, by hand).

Each source is a CSV in a public repository (README.md names the repository, commit and path);
``SOURCE_ROOT`` holds one bare git copy per repository, named ``owner+name/repo``. Every task is
written as ``<name>.csv.gz`` with its feature columns as in the source (strings left as strings)
and a 0/1 column ``target``; identifier columns and columns that record the outcome are dropped.
Tasks above ``MAX_ROWS`` rows are subsampled without replacement with a fixed seed.

    python benches/python/data/binary/prepare.py /path/to/mirrors
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import read_source, subsample, write  # noqa: E402

# name: (repository, path, read_csv options, target column, positive label, columns to drop)
SOURCES = {
    "churn_mlc": ("kp365/TIBA-Course-Work-2-", "mlc_churn.csv", {}, "churn", "yes", ["rownames"]),
    "telco_churn": ("aiplanethub/Datasets", "WA_Fn-UseC_-Telco-Customer-Churn.csv", {}, "Churn", "Yes", ["customerID"]),
    "bank_churn": ("rakibRME/ML-Data-Sets", "Churn_Modelling.csv", {}, "Exited", 1, ["RowNumber", "CustomerId", "Surname"]),
    "hr_attrition": ("aiplanethub/Datasets", "HR_comma_sep.csv", {}, "left", 1, []),
    "bank_marketing": ("estebanrucan/bases-de-datos", "bank-marketing.csv", {"sep": ";"}, "y", 1, []),
    "online_shoppers": ("remijul/dataset", "online_shoppers_intention.csv", {"sep": ";"}, "Revenue", True, []),
    "hotel_cancel": ("stirwin/dataset", "hotel_bookings.csv", {}, "is_canceled", 1, ["reservation_status", "reservation_status_date"]),
    "credit_default_tw": ("rakibRME/ML-Data-Sets", "UCI_Credit_Card.csv", {}, "default.payment.next.month", 1, ["ID"]),
    "credit_risk": ("estebanrucan/bases-de-datos", "credit_risk_dataset.csv", {}, "loan_status", 1, []),
    "card_approval": ("estebanrucan/bases-de-datos", "creditrisk.csv", {}, "Risk", 1, ["ID"]),
    "adult_income": ("rakibRME/ML-Data-Sets", "adult.data.csv", {"skipinitialspace": True}, "salary", ">50K", []),
    "stroke": ("SudheenaMisra/Datasets", "healthcare-dataset-stroke-data.csv", {}, "stroke", 1, ["id"]),
    "cardio": ("rakibRME/ML-Data-Sets", "cardio_train.csv", {"sep": ";"}, "cardio", 1, ["id"]),
    "student_dropout": ("shahriariit/opendataset", "dropout_data.csv", {"sep": ";"}, "Target", "Dropout", []),
}


def build(root: Path, name: str) -> pd.DataFrame:
    repo, path, opts, target, positive, drop = SOURCES[name]
    df = read_source(root, repo, path, opts)
    df.columns = [str(c).strip() for c in df.columns]
    if name == "stroke":  # the source's header names the label column "0"
        df = df.rename(columns={df.columns[-1]: "stroke"})
    if name == "telco_churn":  # numbers stored as text, blank for 11 new customers
        df["TotalCharges"] = pd.to_numeric(df["TotalCharges"], errors="coerce")
    if name == "bank_churn":  # the source repeats a few rows at its end
        df = df.drop_duplicates()
    y = (df[target] == positive).astype(int)
    X = df.drop(columns=[target, *drop])
    return subsample(X.assign(target=y.values))


def main() -> None:
    root = Path(sys.argv[1])
    for name in SOURCES:
        out = build(root, name)
        print(f"{write(HERE, name, out)}, positive rate {out.target.mean():.3f}")


if __name__ == "__main__":
    main()
