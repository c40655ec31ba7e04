"""Poisson regression with exposure: ``y`` is the rate, ``sample_weight`` the exposure.

The Vietnam Living Standards Survey (``vietnam_pharmacy`` in the shared data) counts the
pharmacy visits of 27,765 people. Grouped by sex, age (in decades), years of schooling,
insurance and number of illnesses, the same data are a table of groups: ``persons`` (the exposure) and
``visits / persons`` (the rate). FAST fits the grouped table with ``sample_weight=persons``
to the very same model as the individual rows, because a row of weight ``v`` and rate ``y``
is ``v`` rows of rate ``y`` (scikit-learn's convention for Poisson regression).

    PYTHONPATH=python python3 examples/poisson_exposure.py
"""

import numpy as np
import pandas as pd

from fastpcam import FASTRegressor

FEATURES = ["sex", "age_group", "educ", "insurance", "illness"]

people = pd.read_csv("/work/shared/data/vietnam_pharmacy.csv.gz")
people["sex"] = (people["sex"] == "female").astype(float)
people["age_group"] = np.floor(np.exp(people["age"]) / 10)  # age is log(years): decades
groups = people.groupby(FEATURES, as_index=False).agg(visits=("pharvis", "sum"), persons=("pharvis", "size"))

params = dict(loss="poisson", lambda_ratio=0.01, max_bins=None, tol=1e-8)
by_person = FASTRegressor(**params).fit(people[FEATURES], people["pharvis"])
by_group = FASTRegressor(**params).fit(
    groups[FEATURES], groups["visits"] / groups["persons"], sample_weight=groups["persons"]
)

print(f"{len(people)} people in {len(groups)} groups")
print(f"objective: {by_person.objective_:.12f} (people) vs {by_group.objective_:.12f} (groups)")
rate = by_group.predict(groups[FEATURES])
print(f"largest difference of the predicted rates: {np.max(np.abs(rate - by_person.predict(groups[FEATURES]))):.2e}")
print(f"expected visits, summed over the groups: {np.sum(groups['persons'] * rate):.1f}; observed: {people['pharvis'].sum()}")
print(f"baseline rate exp(intercept_): {np.exp(by_group.intercept_):.3f} visits per person")
for name, cuts, values in zip(FEATURES, by_group.cuts_, by_group.values_):
    print(f"  {name}: cuts {np.round(cuts, 2)}, rate factors {np.round(np.exp(values), 3)}")
