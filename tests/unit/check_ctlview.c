/* check_ctlview.c - what dlqctl writes to a terminal: a text it did not
 * write escaped, cut and padded by columns; tables aligned; a record
 * shown whole. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "ctlview.h"
#include "termtext.h"

static char *out;
static size_t out_len;

/* What dlq_term_put writes of `s`, and its returned width in *w. */
static const char *
put(const char *s, int max, int pad, int *w)
{
	FILE *f;

	free(out);
	f = open_memstream(&out, &out_len);
	*w = dlq_term_put(f, s, max, pad);
	fclose(f);
	return out;
}

static const char *
put_lines(const char *s)
{
	FILE *f;

	free(out);
	f = open_memstream(&out, &out_len);
	dlq_term_put_lines(f, s);
	fclose(f);
	return out;
}

START_TEST(control_characters_are_shown_escaped)
{
	int w;

	/* an ESC sequence that would clear the screen is shown, not run */
	ck_assert_str_eq(put("id\x1b[2J\x1b]0;pwned\x07", -1, 0, &w),
	    "id\\e[2J\\e]0;pwned\\x07");
	ck_assert_int_eq(w, 21);
	ck_assert_str_eq(put("a\nb\tc\rd\x7f", -1, 0, &w),
	    "a\\nb\\tc\\rd\\x7f");
	/* C1 controls (U+009B is a CSI) and bytes that are not UTF-8 */
	ck_assert_str_eq(put("x\xc2\x9b" "2J", -1, 0, &w), "x\\xc2\\x9b2J");
	ck_assert_str_eq(put("\xff\xc3", -1, 0, &w), "\\xff\\xc3");
	ck_assert_str_eq(put("\xe0\x80\xaf", -1, 0, &w), "\\xe0\\x80\\xaf");
	ck_assert_str_eq(put("\xed\xa0\x80", -1, 0, &w), "\\xed\\xa0\\x80");
	ck_assert_str_eq(put("\xf4\x90\x80\x80", -1, 0, &w),
	    "\\xf4\\x90\\x80\\x80");
	/* direction controls would show "gnp.exe" for "exe.png" or an id
	 * backwards: the marks, embeddings, overrides and isolates */
	ck_assert_str_eq(put("file \xe2\x80\xaegnp.exe", -1, 0, &w),
	    "file \\u202egnp.exe");
	ck_assert_int_eq(w, 18);
	ck_assert_str_eq(put("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c\xe2\x80\xaa"
	    "\xe2\x81\xa6\xe2\x81\xa9", -1, 0, &w),
	    "\\u200e\\u200f\\u061c\\u202a\\u2066\\u2069");
	/* their neighbours are text: U+200D (a joiner in emoji), U+202F (a
	 * narrow space), U+2065; a cut sequence is bytes */
	ck_assert_str_eq(put("\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5", -1, 0,
	    &w), "\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5");
	ck_assert_str_eq(put("\xe2\x80" ".", -1, 0, &w), "\\xe2\\x80.");
	ck_assert_str_eq(put("\xe2\x80", -1, 0, &w), "\\xe2\\x80");
	ck_assert_str_eq(put("\xe2", -1, 0, &w), "\\xe2");
	ck_assert_str_eq(put("\xd8", -1, 0, &w), "\\xd8");
	/* printable text, UTF-8 included, is as it was */
	ck_assert_str_eq(put("Zoë → 東京 🙂", -1, 0, &w), "Zoë → 東京 🙂");
	ck_assert_int_eq(w, 13);	/* 東, 京 and 🙂 take two */
	ck_assert_int_eq(dlq_term_width("Zoë\x1b"), 5);
}
END_TEST

/* An id with a zero-width space looks like the id without it, and
 * `dlqctl list --message-id` finds neither by what the operator sees; a
 * text may hide in tag characters. Each invisible character is shown as
 * its escape, and only those: the joiners of scripts and emoji, and
 * combining marks, stay as they are, the marks on no column of their
 * own. */
START_TEST(invisible_characters_are_shown_escaped)
{
	int w;

	ck_assert_str_eq(put("ord\xe2\x80\x8b" "42", -1, 0, &w),
	    "ord\\u200b42");
	ck_assert_int_eq(w, 11);
	ck_assert_str_eq(put("\xef\xbb\xbfid\xe2\x81\xa0x\xc2\xad"
	    "y\xe2\x80\xa8z\xe2\x80\xa9", -1, 0, &w),
	    "\\ufeffid\\u2060x\\u00ady\\u2028z\\u2029");
	ck_assert_str_eq(put("ok\xf3\xa0\x81\x81\xf3\xa0\x81\xbf", -1, 0,
	    &w), "ok\\U000e0041\\U000e007f");
	ck_assert_int_eq(w, 22);
	/* an overlong soft hyphen is bytes, not a soft hyphen */
	ck_assert_str_eq(put("\xe0\x82\xad", -1, 0, &w), "\\xe0\\x82\\xad");
	/* joiners and marks: a family emoji, Persian, e + U+0301 */
	ck_assert_str_eq(put("\xe2\x80\x8c\xe2\x80\x8d", -1, 0, &w),
	    "\xe2\x80\x8c\xe2\x80\x8d");
	ck_assert_int_eq(w, 0);
	ck_assert_str_eq(put("Zoe\xcc\x81", -1, 5, &w), "Zoe\xcc\x81  ");
	ck_assert_int_eq(w, 5);
	ck_assert_int_eq(dlq_term_width("Zoe\xcc\x81"), 3);
}
END_TEST

START_TEST(a_cell_is_cut_and_padded_by_columns)
{
	int w;

	ck_assert_str_eq(put("abc", 5, 5, &w), "abc  ");
	ck_assert_int_eq(w, 5);
	ck_assert_str_eq(put("abcdef", 5, 5, &w), "abcd…");
	ck_assert_int_eq(w, 5);
	ck_assert_str_eq(put("abcde", 5, 5, &w), "abcde");
	/* a character is never cut in half, nor an escape */
	ck_assert_str_eq(put("ééééééé", 4, 4, &w), "ééé…");
	ck_assert_str_eq(put("東京東京", 6, 6, &w), "東京… ");
	ck_assert_str_eq(put("ab\x1b" "cdef", 4, 4, &w), "ab… ");
	ck_assert_int_eq(w, 4);
	/* padding only: never cut */
	ck_assert_str_eq(put("abcdef", -1, 3, &w), "abcdef");
	ck_assert_int_eq(w, 6);
}
END_TEST

START_TEST(a_payload_keeps_its_lines)
{
	ck_assert_str_eq(put_lines("{\n\t\"a\": \"\x1b[31mred\"\r\n}"),
	    "{\n\t\"a\": \"\\e[31mred\"\\r\n}");
}
END_TEST

/* dlqctl list: message ids of any length (UUIDs are 36) and non-ASCII
 * queue names keep the columns aligned; an error's escape is shown. */
/* What a dlqctl view (dlq_view_list, _show, _groups) writes of the
 * answer `json` at `now`. */
static const char *
view(void (*fn)(FILE *, const cJSON *, int64_t), const char *json,
    int64_t now)
{
	cJSON *d = cJSON_Parse(json);
	FILE *f;

	ck_assert_ptr_nonnull(d);
	free(out);
	f = open_memstream(&out, &out_len);
	fn(f, d, now);
	fclose(f);
	cJSON_Delete(d);
	return out;
}

START_TEST(the_list_stays_aligned)
{
	const char *line2, *line3;

	view(dlq_view_list, "["
	    "{\"id\":12,\"received_at\":1000,\"queue\":\"envío_sms\","
	    "\"class\":\"transient\",\"status\":\"open\",\"message_id\":"
	    "\"3f2c9a7e-5b1d-4c8e-9f0a-1234567890ab\",\"error\":"
	    "\"timeout\\u001b[2J\"},"
	    "{\"id\":7,\"received_at\":1000,\"queue\":\"payment_capture\","
	    "\"class\":\"validation\",\"status\":\"assigned\",\"message_id\":"
	    "\"m-1\",\"error\":\"missing field amount\"}]", 61000);
	line2 = strchr(out, '\n') + 1;
	line3 = strchr(line2, '\n') + 1;
	/* ERROR begins at the same column on every line */
	ck_assert_int_eq(strstr(out, "ERROR") - out, strstr(line2,
	    "timeout") - line2 - 1 /* the í of envío is two bytes */);
	ck_assert_int_eq(strstr(out, "ERROR") - out, strstr(line3,
	    "missing") - line3);
	ck_assert_ptr_nonnull(strstr(line2,
	    "3f2c9a7e-5b1d-4c8e-9f0a-1234567890ab timeout\\e[2J\n"));
	ck_assert_ptr_null(strchr(out, '\x1b'));
}
END_TEST

/* dlqctl show: what the message carried (its time, where it was
 * published, its digest, its headers with --payload), and the case. */
START_TEST(show_prints_the_whole_record)
{
	const char *t = view(dlq_view_show, "{\"id\":3,\"status\":\"replayed\","
	    "\"received_at\":1796134982540,\"dlq\":\"orders.dlq\",\"queue\":"
	    "\"orders\",\"message_id\":\"m-1\",\"error\":\"HTTP 503\","
	    "\"retry_count\":2,\"replay_count\":1,\"replay_of\":2,"
	    "\"delivery_count\":null,\"payload_bytes\":73,\"exchange\":"
	    "\"line_exchange\",\"routing_keys\":[\"orders\",\"audit\"],"
	    "\"timestamp\":1796134982,\"delivery_mode\":2,\"priority\":5,"
	    "\"payload_sha256\":\"5b00d8ef\",\"resolution\":\"replayed\","
	    "\"resolved_by\":\"root\",\"resolved_at\":1796135203347,"
	    "\"purged_at\":1796135263347,\"headers\":{\"x-death\":[{}],"
	    "\"x-error\":\"HTTP 503\",\"x-retry-count\":2,\"tags\":[\"a\"]},"
	    "\"payload\":\"{}\"}", 1796135323347);

	ck_assert_ptr_nonnull(strstr(t, "\ntimestamp        "
	    "2026-12-01T14:23:02Z\n"));
	ck_assert_ptr_nonnull(strstr(t, "\npublished to     line_exchange with "
	    "routing keys orders, audit\n"));
	ck_assert_ptr_nonnull(strstr(t, "\ndelivery mode    persistent\n"
	    "priority         5\nx-retry-count    2\nx-replay-count   1\n"
	    "replay of        #2\npayload          73 bytes, sha256 5b00d8ef\n"
	    "purged           60s ago (2026-12-01T14:27:43.347Z)\n"));
	ck_assert_ptr_null(strstr(t, "x-delivery-count"));
	/* relative for a glance, absolute for a timeline */
	ck_assert_ptr_nonnull(strstr(t, "\nresolved         2m ago "
	    "(2026-12-01T14:26:43.347Z)\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nreceived         5m ago "
	    "(2026-12-01T14:23:02.540Z)\n"));
	ck_assert_ptr_nonnull(strstr(t, "\n  x-error                  HTTP 503\n"
	    "  x-retry-count            2\n  tags                     "
	    "[\"a\"]\npayload:\n{}\n"));
	ck_assert_ptr_null(strstr(t, "  x-death"));
}
END_TEST

/* dlqctl show: each replay attempt with its target, reason and evidence;
 * each audit entry naming the record, with its reason, a refusal with
 * why this one. */
START_TEST(show_prints_attempts_and_refusals)
{
	const char *t = view(dlq_view_show, "{\"id\":6,\"status\":\"open\","
	    "\"attempts\":[{\"actor\":\"ann\",\"reason\":\"provider back\","
	    "\"evidence\":null,\"target\":\"(default)/orders\",\"started_at\":"
	    "1796135263347,\"outcome\":\"failed\",\"detail\":\"no route\"}],"
	    "\"audit\":[{\"at\":1796135263347,\"actor\":\"ann\",\"command\":"
	    "\"replay_claim\",\"result\":\"ok\",\"reason\":\"provider back\","
	    "\"what\":null,\"why\":null},"
	    "{\"at\":1796135323347,\"actor\":\"bob\",\"command\":"
	    "\"audit_note\",\"result\":\"ok\",\"what\":\"replay --execute: "
	    "refused by the policy\",\"why\":\"class security is never "
	    "replayed\"}]}", 1796135323347);

	ck_assert_ptr_nonnull(strstr(t, "\nattempts:\n  60s ago "
	    "(2026-12-01T14:27:43.347Z) by ann: failed "
	    "(no route)\n    to (default)/orders; reason: provider back\n"
	    "    evidence: none given\naudit:\n  60s ago "
	    "(2026-12-01T14:27:43.347Z) replay_claim by ann: "
	    "ok; reason: provider back\n  0s ago (2026-12-01T14:28:43.347Z) "
	    "audit_note by bob: ok\n"
	    "    replay --execute: refused "
	    "by the policy: class security is never replayed\n"));
}
END_TEST

/* dlqctl groups: one line per cause, with when it began and last hit. */
START_TEST(groups_say_when_each_cause_began_and_last_hit)
{
	ck_assert_str_eq(view(dlq_view_groups, "[{\"signature\":"
	    "\"2de6ec649bbe\",\"queue\":\"notification_sms\",\"class\":"
	    "\"expired\",\"error\":\"OTP expired\",\"count\":1200,"
	    "\"unresolved\":700,\"first_seen\":1000,\"last_seen\":3541000,"
	    "\"sample_id\":8}]", 3601000),
	    "COUNT   UNRESOLVED SIGNATURE    QUEUE            CLASS   "
	    "FIRST  LAST   SAMPLE   ERROR\n"
	    "1200    700        2de6ec649bbe notification_sms expired 60m    "
	    "60s    8        OTP expired\n");
}
END_TEST

/* dlqctl groups --by-cause: the cause with its sums and the number of
 * its queues, then each queue's group with the signature to act on (a
 * queue's name escaped, as everywhere). */
START_TEST(causes_show_each_queues_group_under_the_cause)
{
	ck_assert_str_eq(view(dlq_view_causes, "[{\"reason\":\"rejected\","
	    "\"class\":\"transient\",\"error\":\"upstream timeout\","
	    "\"count\":1000,\"unresolved\":900,\"first_seen\":1000,"
	    "\"last_seen\":3541000,\"sample_id\":8,\"groups\":["
	    "{\"queue\":\"message_send\",\"signature\":\"2de6ec649bbe\","
	    "\"count\":700,\"unresolved\":600},{\"queue\":\"sms\\u001b[2J\","
	    "\"signature\":\"0123456789ab\",\"count\":300,\"unresolved\":"
	    "300}]},{\"reason\":\"expired\",\"class\":\"expired\","
	    "\"error\":null,\"count\":5,\"unresolved\":0,\"first_seen\":"
	    "1000,\"last_seen\":1000,\"sample_id\":9,\"groups\":["
	    "{\"queue\":\"otp\",\"signature\":\"aaaaaaaaaaaa\",\"count\":5,"
	    "\"unresolved\":0}]}]", 3601000),
	    "COUNT   UNRESOLVED QUEUES CLASS     FIRST  LAST   SAMPLE   ERROR\n"
	    "  COUNT UNRESOLVED SIGNATURE    QUEUE\n"
	    "1000    900        2      transient 60m    60s    8        "
	    "upstream timeout\n"
	    "  700   600        2de6ec649bbe message_send\n"
	    "  300   300        0123456789ab sms\\e[2J\n"
	    "5       0          1      expired   60m    60m    9        "
	    "(no error header)\n"
	    "  5     0          aaaaaaaaaaaa otp\n");
	ck_assert_str_eq(view(dlq_view_causes, "[]", 0), "no dead letters\n");
}
END_TEST

/* dlqctl audit: each entry with its id (where --before pages from); an
 * actor's name is shown escaped, not run. */
START_TEST(audit_entries_carry_their_ids)
{
	ck_assert_str_eq(view(dlq_view_audit, "[{\"id\":42,\"at\":1000,"
	    "\"actor\":\"ops\\u001b[2J\",\"uid\":1000,\"command\":\"drop\","
	    "\"args\":{\"ids\":[7],\"reason\":\"dup\"},\"result\":\"ok\"}]",
	    61000),
	    "ID       WHEN       ACTOR        COMMAND        ARGS"
	    "                                     RESULT\n"
	    "42       60s ago    ops\\e[2J     drop           "
	    "{\"ids\":[7],\"reason\":\"dup\"}               ok\n");
	ck_assert_str_eq(view(dlq_view_audit, "[]", 0),
	    "no audit entries match\n");
}
END_TEST

static void
stats_view(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	dlq_view_stats(f, d);
}

/* Replays of unknown outcome say how to settle them. */
START_TEST(stats_say_how_to_settle_an_unknown_replay)
{
	ck_assert_ptr_nonnull(strstr(view(stats_view, "{\"replaying_unknown\":"
	    "2,\"total\":5}", 0), "\nreplay unknown    2 (list --status "
	    "replaying; arrived: drop ID, else replay ID --force)\n"));
	ck_assert_ptr_nonnull(strstr(view(stats_view, "{\"replaying_unknown\":"
	    "0,\"total\":5}", 0), "\nreplay unknown    0\n"));
}
END_TEST

/* The whole of stats as an operator reads it: the share of each
 * queue's traffic that died, the cases past their escalation, the
 * decisions and redrive; a queue name (from the broker's x-death) is
 * escaped like any text dlqctl did not write. */
START_TEST(stats_print_traffic_escalations_decisions_and_redrive)
{
	const char *t = view(stats_view, "{\"unresolved\":3,\"total\":9,"
	    "\"oldest_unresolved_age_ms\":7200000,\"new_last_hour\":1,"
	    "\"new_last_day\":3,\"replaying_unknown\":0,\"repeated_cycles\":0,"
	    "\"payloads_purged\":0,\"by_queue\":{\"orders\":3},\"by_class\":"
	    "{\"transient\":3},\"by_owner\":{\"payments\":1},"
	    "\"by_status\":{\"open\":3,\"replayed\":6},"
	    "\"traffic\":{\"reported\":true,\"windowed\":false,\"queues\":["
	    "{\"queue\":\"orders\",\"dead_lettered\":3,\"published\":200,"
	    "\"share\":0.015},{\"queue\":\"bad\\u001b[2Jq\",\"dead_lettered\":"
	    "1,\"published\":-1,\"share\":null}]},\"escalations\":{"
	    "\"past_escalate_at\":1,\"unowned_past_sla\":1,\"cases\":[{\"id\":7,"
	    "\"queue\":\"orders\",\"kind\":\"no_decision\",\"overdue_ms\":"
	    "5400000,\"owner\":\"payments\"},{\"id\":8,\"queue\":\"orders\","
	    "\"kind\":\"no_owner\",\"overdue_ms\":60000,\"owner\":null}]},"
	    "\"decisions\":{\"time_to_owner_ms\":{\"count\":4,\"p50\":60000,"
	    "\"p90\":3600000,\"max\":7200000},"
	    "\"oldest_awaiting_decision_age_ms\":null,"
	    "\"replays_without_evidence\":2,\"max_cycles_per_message\":3},"
	    "\"redrive\":{\"left_for_humans\":1,\"outcomes\":{\"published\":5,"
	    "\"failed\":2},\"circuits_open\":[\"orders\"]}}", 0);

	ck_assert_ptr_nonnull(strstr(t, "\nunresolved by class:\n"
	    "  transient                      3\n"
	    "assigned by owner:\n"
	    "  payments                       1\n"
	    "all by status:\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nshare of traffic, last hour:\n"
	    "  QUEUE                          DEAD     PUBLISHED  SHARE\n"
	    "  orders                         3        200        1.5 %\n"
	    "  bad\\e[2Jq                      1        -          -\n"
	    "  (the broker keeps no samples: published is counted since its "
	    "statistics began)\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nescalations:\n"
	    "  past escalate-at without a decision  1\n"
	    "  open without owner past owner SLA    1\n"
	    "  #7       orders                       no_decision  90m overdue"
	    "  payments\n"
	    "  #8       orders                       no_owner     60s overdue\n"
	    "decisions:\n"
	    "  time to owner        p50 60s  p90 60m  max 2h  (4 cases)\n"
	    "  oldest awaiting      -\n"
	    "  replays w/o evidence 2\n"
	    "  most dead cycles     3\n"
	    "redrive:\n"
	    "  left for humans      1\n"
	    "  published            5\n"
	    "  failed               2\n"
	    "  circuit OPEN         orders (dlqctl redrive resume orders "
	    "--reason TEXT)\n"));
	/* without the management API, and with no dead letter in the hour */
	ck_assert_ptr_nonnull(strstr(view(stats_view, "{\"traffic\":{"
	    "\"reported\":false,\"why\":\"rabbitmq.management_url is not "
	    "set\"}}", 0), "\nshare of traffic, last hour: not reported "
	    "(rabbitmq.management_url is not set)\n"));
	ck_assert_ptr_nonnull(strstr(view(stats_view, "{\"traffic\":{"
	    "\"reported\":true,\"windowed\":true,\"queues\":[]}}", 0),
	    "\nshare of traffic, last hour:\n  (no dead letters)\n"));
}
END_TEST

/* dlqctl redrive status: each queue's circuit, and when and why it
 * tripped; a word when redrive is off. */
START_TEST(redrive_status_says_each_circuit)
{
	ck_assert_str_eq(view(dlq_view_redrive, "[{\"queue\":\"orders\","
	    "\"circuit\":\"open\",\"published\":12,\"left_for_humans\":1,"
	    "\"tripped_at\":9880000,\"returned\":4,\"redriven\":5},"
	    "{\"queue\":\"payments\",\"circuit\":\"closed\",\"published\":0,"
	    "\"left_for_humans\":0,\"tripped_at\":null}]", 10000000),
	    "QUEUE                        CIRCUIT  PUBLISHED  LEFT FOR HUMANS  "
	    "TRIPPED\n"
	    "orders                       open     12         1                "
	    "2m ago (4 of 5 came back)\n"
	    "payments                     closed   0          0                "
	    "-\n");
	ck_assert_str_eq(view(dlq_view_redrive, "[]", 0),
	    "redrive is off (no redrive.queues)\n");
}
END_TEST

/* The cases' owners, in a column of their own once one of the records
 * listed has one. */
START_TEST(list_shows_owners_when_there_are_any)
{
	ck_assert_str_eq(view(dlq_view_list, "[{\"id\":5,\"received_at\":1000,"
	    "\"queue\":\"orders\",\"class\":\"transient\",\"status\":"
	    "\"assigned\",\"owner\":\"payments\",\"message_id\":\"m-5\","
	    "\"error\":\"timeout\"},{\"id\":4,\"received_at\":1000,"
	    "\"queue\":\"orders\",\"class\":\"transient\",\"status\":"
	    "\"open\",\"owner\":null,\"message_id\":\"m-4\",\"error\":"
	    "\"timeout\"}]", 61000),
	    "ID       AGE       QUEUE  CLASS     STATUS    OWNER    MESSAGE_ID "
	    "ERROR\n"
	    "5        60s ago   orders transient assigned  payments m-5        "
	    "timeout\n"
	    "4        60s ago   orders transient open      -        m-4        "
	    "timeout\n");
}
END_TEST

/* A dead letter that carried no error header reads as such in list,
 * groups and show, the words the digest uses, not as an empty column. */
START_TEST(a_dead_letter_without_an_error_header_says_so)
{
	const char *t = view(dlq_view_list, "[{\"id\":4,\"received_at\":1000,"
	    "\"queue\":\"orders\",\"class\":\"unknown\",\"status\":"
	    "\"open\",\"message_id\":\"m-4\",\"error\":\"\"},"
	    "{\"id\":5,\"received_at\":1000,\"queue\":\"orders\","
	    "\"class\":\"unknown\",\"status\":\"open\",\"message_id\":"
	    "\"m-5\",\"error\":null}]", 61000);

	ck_assert_ptr_nonnull(strstr(t, "m-4        (no error header)\n"));
	ck_assert_ptr_nonnull(strstr(t, "m-5        (no error header)\n"));
	ck_assert_ptr_nonnull(strstr(view(dlq_view_groups, "[{\"signature\":"
	    "\"2de6ec649bbe\",\"queue\":\"orders\",\"class\":\"unknown\","
	    "\"error\":\"\",\"count\":2,\"unresolved\":2,\"first_seen\":"
	    "1000,\"last_seen\":1000,\"sample_id\":4}]", 61000),
	    " 4        (no error header)\n"));
	ck_assert_ptr_nonnull(strstr(view(dlq_view_show, "{\"id\":4,"
	    "\"error\":\"\"}", 61000),
	    "\nerror            (no error header)\n"));
}
END_TEST

static void
teardown(void)
{
	free(out);
	out = NULL;
}

static Suite *
suite(void)
{
	Suite *s = suite_create("ctlview");
	TCase *tc = tcase_create("ctlview");

	tcase_add_test(tc, control_characters_are_shown_escaped);
	tcase_add_test(tc, invisible_characters_are_shown_escaped);
	tcase_add_test(tc, a_cell_is_cut_and_padded_by_columns);
	tcase_add_test(tc, a_payload_keeps_its_lines);
	tcase_add_test(tc, the_list_stays_aligned);
	tcase_add_test(tc, show_prints_the_whole_record);
	tcase_add_test(tc, show_prints_attempts_and_refusals);
	tcase_add_test(tc, groups_say_when_each_cause_began_and_last_hit);
	tcase_add_test(tc, causes_show_each_queues_group_under_the_cause);
	tcase_add_test(tc, a_dead_letter_without_an_error_header_says_so);
	tcase_add_test(tc, audit_entries_carry_their_ids);
	tcase_add_test(tc, list_shows_owners_when_there_are_any);
	tcase_add_test(tc, stats_say_how_to_settle_an_unknown_replay);
	tcase_add_test(tc, stats_print_traffic_escalations_decisions_and_redrive);
	tcase_add_test(tc, redrive_status_says_each_circuit);
	tcase_add_checked_fixture(tc, NULL, teardown);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
