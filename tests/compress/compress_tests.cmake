# Sparse aggregation, error feedback, the compressed all-reduce, the top-k comm hook and
# convergence, across ranks through scrun: compress.<behaviour>[.<args>].np<N>.
foreach(prog test_sparse test_compressor test_compress_hook test_compress_errors
             test_convergence)
  add_executable(${prog} ${prog}.c)
  target_link_libraries(${prog} PRIVATE shardcomm m)
endforeach()
target_link_libraries(test_compress_hook PRIVATE Threads::Threads)

# "program name args... ranks" per entry.
set(SC_COMPRESS_TESTS
  "test_sparse matches_reference float32 float32 32 2"
  "test_sparse matches_reference float32 float32 32 3"
  "test_sparse matches_reference float32 float16 64 4"
  "test_sparse matches_reference float64 float64 64 2"
  "test_sparse matches_reference float64 float16 32 3"
  "test_sparse matches_reference float16 float16 32 2"
  "test_sparse matches_reference bfloat16 bfloat16 64 3"
  "test_sparse overlapping_indices_add 3"
  "test_sparse edge_sizes 1"
  "test_sparse edge_sizes 2"
  "test_sparse nan_and_inf_pass_through 2"
  "test_sparse nan_and_inf_pass_through 3"
  "test_sparse pads_are_skipped 2"
  "test_sparse sum_follows_rank_order 3"
  "test_sparse sum_follows_rank_order 4"
  "test_compressor first_step_matches_topk float32 0 0 sum 2"
  "test_compressor first_step_matches_topk float32 1 64 avg 3"
  "test_compressor first_step_matches_topk float64 0 32 avg 2"
  "test_compressor first_step_matches_topk float16 0 0 sum 3"
  "test_compressor first_step_matches_topk bfloat16 1 0 sum 2"
  "test_compressor error_feedback_conserves_the_sum float32 0 2"
  "test_compressor error_feedback_conserves_the_sum float32 1 3"
  "test_compressor error_feedback_conserves_the_sum float64 0 2"
  "test_compressor error_feedback_conserves_the_sum float64 1 2"
  "test_compressor error_feedback_conserves_the_sum float16 0 2"
  "test_compressor momentum_correction_matches_reference 2"
  "test_compressor momentum_correction_matches_reference 3"
  "test_compressor momentum_correction_matches_reference 200003 0 3 2"
  "test_compressor momentum_correction_matches_reference 150001 0.9 2 2"
  "test_compressor error_feedback_conserves_the_sum float32 0 200003 exact 2"
  "test_compressor error_feedback_conserves_the_sum float16 1 131101 approx 2"
  "test_compressor error_feedback_conserves_the_sum float32 0 524309 approx jump 2"
  "test_compressor error_feedback_conserves_the_sum float32 0 131101 random 2"
  "test_compressor warmup_steps_are_dense 2"
  "test_compressor density_one_is_dense 3"
  "test_compressor reset_clears_residuals_and_restarts_warmup 2"
  "test_compressor save_load_round_trip 2"
  "test_compressor save_load_round_trip 100003 approx 2"
  "test_compressor save_load_round_trip 100003 random 2"
  "test_compressor state_of_another_rank_is_refused 2"
  "test_compressor state_of_another_rank_is_refused 3"
  "test_compressor refused_step_leaves_an_unknown_origin 2"
  "test_compressor state_of_another_split_rank_names_world_ranks 2"
  "test_compressor state_of_another_split_rank_names_world_ranks 3"
  "test_compressor fp16_values_saturate float32 2"
  "test_compressor fp16_values_saturate float64 3"
  "test_compressor overflow_step_is_not_kept exact 0 2"
  "test_compressor overflow_step_is_not_kept exact 0.9 3"
  "test_compressor overflow_step_is_not_kept approx 0 2"
  "test_compressor overflow_step_is_not_kept random 0.5 2"
  "test_compressor compressed_sum_follows_rank_order 3"
  "test_compressor compressed_sum_follows_rank_order 4"
  "test_compress_hook density_one_equals_dense 2"
  "test_compress_hook density_one_equals_dense 3"
  "test_compress_hook density_matches_reference 2"
  "test_compress_hook density_matches_reference 4"
  "test_compress_hook hook_state_survives_save_and_load 2"
  "test_compress_hook hook_state_without_its_table_still_loads 2"
  "test_compress_hook hook_state_with_a_bad_table_is_refused 2"
  "test_compress_hook hook_state_of_a_compressor_with_a_negative_key_loads 2"
  "test_compress_hook hook_state_of_a_compressor_with_a_huge_key_loads 2"
  "test_compress_hook hook_state_marks_dropped_indices_with_bucket_0_empty 2"
  "test_compress_hook hook_state_marks_index_0_stale_when_its_bucket_moves_up 2"
  "test_compress_hook hook_state_of_another_rank_fails_every_rank 2"
  "test_compress_hook hook_state_refused_on_one_rank_changes_nothing 2"
  "test_compress_hook hook_state_loaded_on_one_rank_fails_every_rank 2"
  "test_compress_hook hook_state_waits_for_its_layout_after_load 2"
  "test_compress_hook hook_state_waits_for_its_layout_after_load counts_equal 2"
  "test_compress_hook hook_state_waits_for_its_layout_after_load one_bucket 2"
  "test_compress_hook hook_state_in_use_is_saved_when_no_rebuild_follows 2"
  "test_compress_hook hook_state_after_a_failed_iteration_keeps_the_buckets_it_never_started 2"
  "test_compress_hook hook_state_saved_by_two_threads_at_once 1"
  "test_compress_hook density_matches_reference large 2"
  "test_compress_hook density_matches_reference large 4"
  "test_compress_hook density_matches_reference view 2"
  "test_compress_hook density_matches_reference view 4"
  "test_compress_hook density_matches_reference large view 2"
  "test_compress_hook accumulation_equals_one_synced_step 2"
  "test_compress_hook accumulation_equals_one_synced_step view 2"
  "test_compress_hook hook_sum_follows_rank_order 3"
  "test_compress_hook hook_sum_follows_rank_order 4"
  "test_convergence converges_with_error_feedback 4")
foreach(spec ${SC_COMPRESS_TESTS})
  separate_arguments(f UNIX_COMMAND "${spec}")
  list(POP_FRONT f prog)
  list(POP_BACK f n)
  string(REPLACE ";" "." name "${f}")
  sc_add_rank_test(NAME compress.${name}.np${n} RANKS ${n} COMMAND $<TARGET_FILE:${prog}> ${f}
                   LABELS multirank TIMEOUT 60)
endforeach()

# Bad input. SC_TIMEOUT=5: a hang would fail the test within seconds instead of passing.
# UBSAN_OPTIONS: undefined behaviour fails the test in a build whose sanitizer recovers.
set(SC_COMPRESS_FAULTS
  "bad_index_fails_every_rank 2"
  "bad_index_fails_every_rank 3"
  "sparse_bad_argument_fails_every_rank dtype 2"
  "sparse_bad_argument_fails_every_rank value_dtype 3"
  "sparse_bad_argument_fails_every_rank index_bits 2"
  "sparse_bad_argument_fails_every_rank null_values 2"
  "sparse_bad_argument_fails_every_rank null_dense 2"
  "sparse_bad_argument_fails_every_rank index_64 3"
  "ranks_disagree n 2"
  "ranks_disagree k 3"
  "ranks_disagree value_dtype 2"
  "ranks_disagree index_bits 2"
  "bad_config_is_refused 1"
  "key_reused_with_another_count 2"
  "key_reused_with_another_count 3"
  "hook_refuses_integer_buckets 2"
  "refused_step_changes_nothing 2"
  "refused_step_changes_nothing approx 2"
  "refused_step_changes_nothing random 2"
  "config_disagreement_is_a_mismatch error_feedback 2"
  "config_disagreement_is_a_mismatch momentum 3"
  "negative_zero_momentum_is_no_momentum 3"
  "sparse_k_overflow_is_refused 2"
  "sparse_32_bit_indices_need_n_below_2_pow_32 2"
  "zero_count_with_null_buffers 2"
  "misaligned_buffers_are_refused 2"
  "hook_config_disagreement_fails_create density 2"
  "hook_config_disagreement_fails_create density_last_digit 2"
  "hook_config_disagreement_fails_create warmup_steps 3"
  "hook_config_disagreement_fails_create mode 2"
  "foreign_state_is_refused 1"
  "state_past_memory_is_refused 1")
sc_add_rank_specs(PREFIX compress PROGRAM test_compress_errors SPECS ${SC_COMPRESS_FAULTS}
                  LABELS fault ENV SC_TIMEOUT=5 UBSAN_OPTIONS=halt_on_error=1 TIMEOUT 30)
