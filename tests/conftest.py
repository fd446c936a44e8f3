"""Fixtures shared by several test files, and the grouping that keeps them shared under pytest-xdist.

The suite runs on two workers (``-n 2`` in pyproject.toml, ``--dist loadgroup``): every test that
needs the local Spark session is sent to one worker (group ``spark``), so a run starts one JVM.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import warnings

# numpy's OpenBLAS on one thread, as the sigmaudit command runs it (sigmaudit.cli.run), unless set: the suite
# calls the CLI in-process, and two workers each running OpenBLAS threads on two cores spent a third more CPU
# in the prior fits. Set here, before anything imports numpy (the workers inherit it).
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest


@pytest.fixture(scope="session")
def spark_engine():
    """The local session every Spark test shares, also serving Spark Connect on a free port (for
    --spark-remote), started with the engine's own settings (one per run: a JVM takes seconds to start,
    and a second ``getOrCreate`` would return the first session, without the Connect plugin)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java for a local Spark session")
    with warnings.catch_warnings():  # PySpark's notice about the pandas version
        warnings.simplefilter("ignore")
        from pyspark.sql import SparkSession

    from sigmaudit.loaders.engines import get_engine
    from sigmaudit.loaders.engines.spark import LOCAL_CONF

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    builder = SparkSession.builder.master("local[*]").appName("sigmaudit-tests")
    for key, value in {**LOCAL_CONF, "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
                       "spark.connect.grpc.binding.port": str(port)}.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():  # PySpark's notice about the pandas version, on first use
        warnings.simplefilter("ignore")
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    engine = get_engine("spark")
    engine.connect_url = f"sc://localhost:{port}"
    yield engine
    if "pyspark.sql.connect.session" in sys.modules:  # close Connect clients first: they retry for minutes
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        client = ConnectSession.getActiveSession() or getattr(ConnectSession, "_default_session", None)
        if client is not None:
            client.stop()
    session.stop()


def _uses_spark(item: pytest.Item) -> bool:
    """A test that runs a Spark session: it asks for ``spark_engine``, or is the ``spark`` case of a test
    parametrised over engines (which asks for the fixture by name)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "spark_engine" in getattr(item, "fixturenames", ()) or params.get("engine") == "spark"


SLOW_FILES = ("tests/test_fuzz.py", "tests/test_packaging.py", "tests/test_trainers_trl.py",
              "tests/test_trainers_verl.py")
"""Files whose tests are all slow (fuzzing, building the package, real trainers)."""
SLOW = (
    "tests/test_allocate.py::test_budget_never_loses_to_the_best_uniform_G",
    "tests/test_allocate.py::test_budget_respected_and_every_prompt_once",
    "tests/test_architecture.py::test_no_reason_on_a_function_within_the_limit",
    "tests/test_by.py::test_report_by_gives_each_value_its_scan",
    "tests/test_by.py::test_scan_and_plan_by_give_one_entry_per_value",
    "tests/test_by.py::test_trend_by_gives_each_value_its_steps",
    "tests/test_check.py::test_small_n_extreme_share_is_not_stuck_at_zero",
    "tests/test_cli_startup.py::test_a_command_imports_only_what_it_uses",
    "tests/test_cli_startup.py::test_plain_numbers_read_as_pydantic_reads_them",
    "tests/test_cli_startup.py::test_the_collector_is_tuned_for_start_up_only",
    "tests/test_core_advantages.py::test_any_constant_baseline_cancels",
    "tests/test_core_advantages.py::test_dapo_update_is_grpo_on_kept_groups_and_zero_on_dropped",
    "tests/test_core_advantages.py::test_drgrpo_update_equals_sigma_squared_times_score_gap",
    "tests/test_core_advantages.py::test_group_mean_centering_is_leave_one_out_times_G_minus_1_over_G",
    "tests/test_core_advantages.py::test_grpo_update_equals_sigma_times_score_gap",
    "tests/test_core_advantages.py::test_reward_shift_and_scale_cancel_in_grpo",
    "tests/test_core_advantages.py::test_rloo_update_equals_sigma_squared_G_over_G_minus_1",
    "tests/test_core_corpus.py::test_default_estimator_switches_at_min_samples",
    "tests/test_core_corpus.py::test_from_pairs_equals_the_expanded_corpus",
    "tests/test_core_estimates.py::test_a_quantity_at_G_has_the_same_bits_in_a_batch_and_alone",
    "tests/test_core_estimates.py::test_bootstrap_interval_coverage",
    "tests/test_core_estimates.py::test_extreme_share_is_positive_and_labelled_on_small_n_logs",
    "tests/test_core_estimates.py::test_issue_reproducer_plan_then_check_on_evalperf",
    "tests/test_core_estimates.py::test_plan_recommends_exactly_the_smallest_G_check_passes",
    "tests/test_core_estimates.py::test_posterior_never_always_shares_print_only_with_their_interval",
    "tests/test_core_optimize.py::test_random_corpora_not_worse",
    "tests/test_core_optimize.py::test_real_corpora_not_worse_and_same_choice",
    "tests/test_core_optimize.py::test_the_pace_rule_keeps_the_optimum",
    "tests/test_core_refit.py::test_lockstep_starts_stop_as_the_sequential_runs",
    "tests/test_core_special.py::test_beta_cell_masses_against_mpmath",
    "tests/test_core_special.py::test_commands_import_no_scipy",
    "tests/test_dependencies.py::test_every_module_the_package_imports_is_a_declared_dependency",
    "tests/test_docs.py::test_docs_site_builds_strictly",
    "tests/test_docs.py::test_every_json_key_the_readme_names_exists",
    "tests/test_docs.py::test_examples_are_what_the_code_prints",
    "tests/test_drift.py::test_headline_is_observed_and_a_window_prediction_lands_on_it",
    "tests/test_drift.py::test_the_report_page_says_the_pass_rates_moved",
    "tests/test_filtered.py::test_every_command_shows_the_warning_in_its_text_output",
    "tests/test_filtered.py::test_filtered_key_in_the_other_commands",
    "tests/test_forecast.py::test_log_out_is_the_simulated_run",
    "tests/test_forecast.py::test_sigmaudit_rule_beats_greso_at_equal_loss",
    "tests/test_integrations.py::test_silent_group_metrics_are_the_trainers_zero_std_share_and_sigmaudits_forecast",
    "tests/test_integrations.py::test_skip_policy_draws_skip_listed_prompts_at_the_floor",
    "tests/test_loaders_defects.py::test_23_14_closed_stdin_from_the_shell",
    "tests/test_loaders_engines.py::test_duckdb_reads_a_dotted_column_name_as_a_column",
    "tests/test_loaders_engines.py::test_duckdb_reads_a_hash_inside_an_unquoted_prompt_id_as_text",
    "tests/test_loaders_engines.py::test_duckdb_scan_json_equals_polars",
    "tests/test_loaders_engines.py::test_file_by_file_follows_polars_rules",
    "tests/test_loaders_engines.py::test_non_integer_steps_are_not_merged",
    "tests/test_loaders_engines.py::test_only_leading_comment_lines_are_skipped",
    "tests/test_loaders_engines.py::test_repeated_blocks_dropped_as_polars_does",
    "tests/test_loaders_remote.py::test_object_copies_are_removed_once_reduced_and_bounded_by_free_space",
    "tests/test_loaders_remote.py::test_object_store_listing_that_stalls_times_out",
    "tests/test_loaders_remote.py::test_odd_keys_under_any_glob_are_named_and_the_rest_read",
    "tests/test_loaders_remote.py::test_s3_prefix_lists_supported_files_only",
    "tests/test_loaders_remote.py::test_s3_scan_json_equals_local_copy",
    "tests/test_loaders_remote.py::test_s3_watch_polls_the_listing_and_reads_each_object_once",
    "tests/test_loaders_remote.py::test_stalled_read_honours_sigterm",
    "tests/test_mass_share_accuracy.py::test_posterior_shares_beat_plugin_on_a_smooth_corpus_at_n_50",
    "tests/test_mass_share_accuracy.py::test_posterior_shares_beat_plugin_on_the_sample_logs_generator_at_n_160",
    "tests/test_number_style.py::test_table_and_markdown_follow_the_number_style",
    "tests/test_one_optimum.py::test_a_point_mass_the_data_do_not_hold_is_exactly_zero",
    "tests/test_one_optimum.py::test_other_cpu_features_and_blas_cores_print_the_same",
    "tests/test_packaging.py::test_the_wheel_declares_what_an_index_shows",
    "tests/test_render.py::test_a_panel_drawn_expanded_is_the_panel_rich_measures",
    "tests/test_scan_golden.py::test_scan_table_unchanged",
    "tests/test_scan_properties.py::test_random_counts_never_crash_and_rates_lie_in_unit_interval",
)
"""Tests that took 7 s or more of one worker in a full run on 2 cores (``--durations``): with every Spark test and
:data:`SLOW_FILES` they are ``slow``, and ``pytest -m "not slow"`` is the quick subset (README, Development)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = set(SLOW)
    for item in items:
        spark = _uses_spark(item)
        if spark:
            item.add_marker(pytest.mark.xdist_group("spark"))
        path = item.nodeid.split("::", 1)[0]
        if spark or path in SLOW_FILES or item.nodeid.split("[", 1)[0] in slow:
            item.add_marker(pytest.mark.slow)
