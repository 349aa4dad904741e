/* check_metrics.c - exposition-format details of the in-memory metrics. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "../check_main.h"
#include "metrics.h"

START_TEST(label_values_are_escaped)
{
	struct dlq_buf b;

	dlq_buf_init(&b);
	dlq_metrics_label(&b, "a\"b\\c\nd");
	ck_assert_str_eq(b.data, "a\\\"b\\\\c\\nd");
	dlq_buf_release(&b);
}
END_TEST

START_TEST(counters_add_up_per_label_set)
{
	struct dlq_buf b;

	dlq_metrics_dead_letters("q.dlq", "rejected", "transient", 2);
	dlq_metrics_dead_letters("q.dlq", "rejected", "transient", 3);
	dlq_metrics_dead_letters("q.dlq", "expired", "expired", 1);
	dlq_metrics_consumer("q.dlq", true);
	dlq_metrics_consumer_others("q.dlq", 2);
	dlq_metrics_commit(0.003);
	dlq_buf_init(&b);
	dlq_metrics_render(&b);
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_dead_letters_total{dlq=\"q.dlq\","
	    "reason=\"rejected\",class=\"transient\"} 5\n"));
	ck_assert_ptr_nonnull(strstr(b.data, "reason=\"expired\",class="
	    "\"expired\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_consumer_up{dlq=\"q.dlq\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "dlq_consumer_others{dlq=\"q.dlq\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "dlq_archive_commit_seconds_bucket{le=\"0.0025\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "dlq_archive_commit_seconds_bucket{le=\"0.005\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "dlq_archive_commit_seconds_count 1\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "# TYPE dlq_dead_letters_total counter\n"));
	dlq_buf_release(&b);
}
END_TEST

/* A queue name may take AMQP's 255 bytes. Two long ones that differ at
 * their end are two series, each named whole: a name cut short would
 * count both in one, and a cut through a multi-byte character would
 * make the scrape invalid UTF-8, which Prometheus refuses whole. */
START_TEST(long_queue_names_are_whole_series)
{
	char a[256], b2[256], want[400];
	struct dlq_buf b;
	size_t i;

	for (i = 0; i + 2 < 250; i += 2)
		memcpy(a + i, "\xc3\xa9", 2);		/* é */
	memcpy(a + i, ".dlq", 5);
	memcpy(b2, a, sizeof(b2));
	memcpy(b2 + i, ".DLQ", 5);
	dlq_metrics_dead_letters(a, "rejected", "unknown", 1);
	dlq_metrics_dead_letters(b2, "rejected", "unknown", 2);
	dlq_buf_init(&b);
	dlq_metrics_render(&b);
	snprintf(want, sizeof(want), "dlq_dead_letters_total{dlq=\"%s\","
	    "reason=\"rejected\",class=\"unknown\"} 1\n", a);
	ck_assert_ptr_nonnull(strstr(b.data, want));
	snprintf(want, sizeof(want), "dlq_dead_letters_total{dlq=\"%s\","
	    "reason=\"rejected\",class=\"unknown\"} 2\n", b2);
	ck_assert_ptr_nonnull(strstr(b.data, want));
	dlq_buf_release(&b);
}
END_TEST

/* The archive is unwritable while any consumer says its writes fail,
 * with the last reason given, and writable again once all say they
 * work. */
START_TEST(the_archive_is_unwritable_while_a_consumer_says_so)
{
	struct dlq_buf b;
	char why[64];

	ck_assert(!dlq_metrics_archive_error(why, sizeof(why)));
	dlq_metrics_archive("a.dlq", "BEGIN IMMEDIATE: database is locked");
	dlq_metrics_archive("b.dlq", "COMMIT: database or disk is full");
	dlq_metrics_archive("a.dlq", NULL);
	ck_assert(dlq_metrics_archive_error(why, sizeof(why)));
	ck_assert_str_eq(why, "COMMIT: database or disk is full");
	dlq_buf_init(&b);
	dlq_metrics_render(&b);
	ck_assert_ptr_nonnull(strstr(b.data, "# TYPE dlq_archive_writable "
	    "gauge\ndlq_archive_writable 0\n"));
	dlq_metrics_archive("b.dlq", NULL);
	ck_assert(!dlq_metrics_archive_error(why, sizeof(why)));
	dlq_buf_reset(&b);
	dlq_metrics_render(&b);
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_archive_writable 1\n"));
	dlq_buf_release(&b);
}
END_TEST

/* More label sets than a table holds (here webhook hosts, 64): the
 * series there keep counting as themselves, the rest are counted in one
 * series labelled "other", so a scrape stays bounded and adds up.
 * (Registered last: under valgrind the tests share the tables.) */
/* A replica's own series name it; the prefix before them is left alone,
 * and dlq_leader says it leads (no lease to ask for here: it does). */
START_TEST(a_replica_labels_its_own_series)
{
	struct dlq_buf b;

	dlq_metrics_replica("host-1:42");
	dlq_metrics_dead_letters("r.dlq", "rejected", "transient", 2);
	dlq_metrics_acked(7);
	dlq_metrics_commit(0.003);
	dlq_buf_init(&b);
	dlq_buf_adds(&b, "before 1\n");
	dlq_metrics_render(&b);
	ck_assert_ptr_eq(strstr(b.data, "before 1\n"), b.data);
	ck_assert_ptr_nonnull(strstr(b.data, "\ndlq_dead_letters_total{replica="
	    "\"host-1:42\",dlq=\"r.dlq\",reason=\"rejected\",class="
	    "\"transient\"} 2\n"));
	/* (counts of the tests before, when they share the process) */
	ck_assert_ptr_nonnull(strstr(b.data,
	    "\ndlq_acks_total{replica=\"host-1:42\"} "));
	ck_assert_ptr_nonnull(strstr(b.data, "\ndlq_archive_commit_seconds_"
	    "bucket{replica=\"host-1:42\",le=\"0.005\"} "));
	ck_assert_ptr_nonnull(strstr(b.data, "\n# TYPE dlq_acks_total counter\n"));
	ck_assert_ptr_nonnull(strstr(b.data,
	    "\ndlq_leader{replica=\"host-1:42\"} 1\n"));
	ck_assert_ptr_null(strstr(b.data, "\ndlq_acks_total "));
	dlq_buf_release(&b);
}
END_TEST

START_TEST(label_sets_past_the_table_count_as_other)
{
	struct dlq_buf b;
	char host[32];
	int i;

	for (i = 0; i < 70; i++) {
		snprintf(host, sizeof(host), "h%d.example", i);
		dlq_metrics_alert(host, true);
	}
	dlq_metrics_alert("h0.example", true);
	dlq_metrics_alert("h62.example", false);
	dlq_buf_init(&b);
	dlq_metrics_render(&b);
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_alert_digests_total{target="
	    "\"h0.example\",outcome=\"sent\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_alert_digests_total{target="
	    "\"h62.example\",outcome=\"sent\"} 1\n"));
	ck_assert_ptr_null(strstr(b.data, "h63.example"));
	ck_assert_ptr_null(strstr(b.data, "h62.example\",outcome=\"failed"));
	ck_assert_ptr_nonnull(strstr(b.data, "dlq_alert_digests_total{target="
	    "\"other\",outcome=\"other\"} 8\n"));
	dlq_buf_release(&b);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("render");

	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, counters_add_up_per_label_set);
	tcase_add_test(tc, long_queue_names_are_whole_series);
	tcase_add_test(tc, the_archive_is_unwritable_while_a_consumer_says_so);
	tcase_add_test(tc, label_sets_past_the_table_count_as_other);
	tcase_add_test(tc, a_replica_labels_its_own_series);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
