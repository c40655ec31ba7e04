"""pytest configuration for the fastpcam Python tests."""

from __future__ import annotations

import sys
from pathlib import Path

# the helper modules (_reference.py, _data.py) sit next to the tests
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:  # a modest, deterministic hypothesis profile: the suite must stay quick on 2 cores
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "fastpcam",
        max_examples=25,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    # a longer, randomised run for local bug hunting: pytest --hypothesis-profile=fastpcam-thorough
    settings.register_profile(
        "fastpcam-thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("fastpcam")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass


# ---- the quick tier: python -m pytest -m "not slow" ------------------------------------------
#
# The tests below are marked `slow` (whole test functions, every parametrisation) and left out
# of the quick tier, which must run in about three minutes on two cores and still import every
# module of python/fastpcam (tests/python/test_quick_tier.py checks that). CI runs everything.
# One entry per line, "file.py::test_function", kept sorted: adding or removing a test elsewhere
# needs no change here. Chosen from `pytest --durations=0` on the whole suite (one 2-core
# machine, shared): each took about 3 s or more there (summed over its parametrisations).
SLOW = frozenset(
    line.strip()
    for line in """
test_auto_penalty.py::test_noise_heavy_data_get_a_larger_penalty_and_a_better_test_error
test_classifier.py::test_numpydoc_and_documented_example
test_classifier.py::test_objective_matches_scipy_reference
test_classifier.py::test_objective_never_increases
test_classifier.py::test_predictions_are_consistent_and_labels_any_type
test_classifier.py::test_sklearn_estimator_checks
test_classifier_auto.py::test_breast_cancer_default
test_classifier_auto.py::test_noise_features_get_a_larger_penalty_and_a_better_test_log_loss
test_cli.py::test_demo_subprocess
test_cli.py::test_fit_predict_round_trip
test_cli.py::test_tampered_model_file_gives_a_message_not_a_traceback
test_cv.py::test_cv_on_real_data_beats_the_ends_of_the_grid
test_cv.py::test_sklearn_estimator_checks
test_dask.py::test_bad_partitions_name_the_column
test_dask.py::test_dask_bins_from_sample
test_dask.py::test_dask_fit_equals_in_memory_fit
test_dask.py::test_dask_read_parquet_equals_in_memory_fit
test_dask.py::test_dask_statistics_equal_in_memory
test_dask.py::test_dask_stays_optional
test_dask.py::test_failed_task_is_retried_without_corrupting_the_result
test_dask.py::test_statistics_fit_with_held_out_statistics
test_docs.py::test_stubtest
test_errors.py::test_no_input_crashes_the_interpreter
test_flsa.py::test_matches_exhaustive_dual_enumeration
test_fuzz.py::test_classifier_fuzz
test_fuzz.py::test_cv_fuzz
test_fuzz.py::test_regressor_fuzz
test_fuzz.py::test_sparse_fuzz
test_inspect.py::test_explain_real_data_sums_to_predict
test_interrupt.py::test_ctrl_c_stops_a_fit
test_interrupt.py::test_ctrl_c_stops_paths_searches_and_sparse_fits
test_l2_jumps.py::test_the_squared_term_spreads_an_effect_over_correlated_features
test_loglink_pairs.py::test_a_known_interaction_is_found_and_lowers_the_held_out_deviance
test_loglink_pairs.py::test_the_cli_predicts_and_the_report_draws_a_log_link_model_with_pairs
test_loglink_pairs.py::test_zero_interactions_is_the_additive_model_exactly
test_losses.py::test_objective_matches_slow_reference
test_monotone.py::test_dask_fits_honour_the_constraints
test_monotone.py::test_monotone_log_link_losses
test_monotone.py::test_re_solving_a_constrained_block_gains_at_most_1e6_at_tol_1e5
test_monotone.py::test_the_fit_matches_an_independent_bounded_solve
test_multiclass.py::test_class_jumps_have_median_zero
test_multiclass.py::test_kkt_and_monotone_history
test_multiclass.py::test_objective_matches_a_slow_reference
test_multiclass.py::test_objective_never_increases
test_multiclass.py::test_plots_per_class
test_multiclass.py::test_threads_give_identical_models
test_multiclass_pairs.py::test_a_known_interaction_is_found_and_lowers_the_held_out_log_loss
test_multiclass_pairs.py::test_explain_importances_and_plots_include_the_pairs
test_multiclass_pairs.py::test_the_report_draws_one_heatmap_per_class
test_onnx.py::test_binary_classifier_reproduces_labels_probabilities_and_log_odds
test_onnx.py::test_fitted_pair_terms_reproduce_predict
test_onnx.py::test_log_link_regressor_outputs_the_mean_and_the_score
test_onnx.py::test_multiclass_classifier_reproduces_every_output
test_onnx.py::test_numpy_input_model_and_file_round_trip
test_onnx.py::test_pipeline_classifier_converts_as_a_whole
test_onnx.py::test_pipeline_regressor_converts_as_a_whole
test_onnx.py::test_pipeline_with_float32_input_and_zipmap_runs
test_onnx.py::test_sparse_and_cv_regressors
test_pairs.py::test_a_moderate_interaction_is_found_past_wobbles_at_the_start_of_the_pair_path
test_pairs.py::test_a_tolerance_below_rounding_stalls_a_classifier_pair_fit
test_pairs.py::test_cross_validation_adds_pairs_to_its_refit
test_pairs.py::test_every_model_has_pairs_by_default
test_pairs.py::test_many_weak_interactions_take_more_coarser_pairs
test_plot.py::test_demo_no_plot_and_without_matplotlib
test_plot.py::test_demo_saves_its_plot
test_progress.py::test_a_fit_shows_its_block_updates_and_kkt
test_progress.py::test_auto_shows_nothing_when_nobody_watches
test_progress.py::test_dask_statistics_count_their_tasks
test_progress.py::test_lambda_path_shows_its_elapsed_time
test_progress.py::test_parquet_passes_count_their_rows
test_progress.py::test_verbose_is_unchanged_and_the_callback_still_runs
test_progress.py::test_without_tqdm_there_is_no_bar_and_no_error
test_readme.py::test_readme_example_runs
test_report.py::test_cli_report
test_report.py::test_report_is_one_offline_file_with_every_part
test_report.py::test_report_of_classifiers_cv_and_a_model_file
test_report.py::test_report_renders_in_headless_chromium
test_report.py::test_the_console_check_catches_a_network_load
test_sklearn_compat.py::test_auto_max_bins_depends_on_the_numbers_of_rows_and_features
test_sklearn_compat.py::test_sklearn_estimator_checks
test_smoothing.py::test_auto_keeps_smooth_parts_on_smooth_surfaces_and_they_help
test_smoothing.py::test_no_held_out_rows_means_no_smooth_parts_and_a_float_adds_them
test_snapshots.py::test_model_unchanged
test_sparse.py::test_explicit_lambda_s_values
test_sparse.py::test_recovers_the_true_support_despite_correlated_decoys
test_sparse.py::test_sklearn_estimator_checks
test_sql.py::test_a_table_missing_a_column_gives_an_sqlite_error_naming_it
test_sql.py::test_sql_reproduces_predict_on_the_shared_houses_data
test_sql.py::test_sql_reproduces_predict_on_the_shipped_houses_with_column_names
test_surface.py::test_classifier_model_file_keeps_the_classes
test_surface.py::test_json_round_trip_is_exact_and_keeps_the_class
test_surface.py::test_plots_run
test_surface.py::test_shape_functions_cover_every_input_feature
test_tol_zero.py::test_tol_zero_stops_when_no_block_can_lower_the_objective
test_wide.py::test_wide_matrix_bins_within_a_memory_cap
""".splitlines()
    if line.strip() and not line.strip().startswith("#")
)


def slow_key(nodeid: str) -> str:
    """`tests/python/test_x.py::test_f[param]` → `test_x.py::test_f` (a class's tests:
    `test_x.py::Class::test_f`)."""
    path, _, rest = nodeid.partition("::")
    return f"{path.rsplit('/', 1)[-1]}::{rest.split('[', 1)[0]}"


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if slow_key(item.nodeid) in SLOW:
            item.add_marker(pytest.mark.slow)
