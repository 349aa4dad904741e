/* check_digest.c - grouping, bounds and the digest text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "digest.h"

static struct dlq_digest d;
static struct dlq_buf text;

static void
setup(void)
{
	ck_assert_int_eq(dlq_digest_init(&d, 4), 0);
	dlq_buf_init(&text);
}

static void
teardown(void)
{
	dlq_digest_release(&d);
	dlq_buf_release(&text);
}

static void
add(struct dlq_digest *dg, const char *queue, const char *error,
    const char *id, int64_t at)
{
	struct dlq_alert_event e = { 0, queue, "rejected", "", error, id, at,
	    error };

	e.hash = dlq_signature_hash(queue, "rejected", "", error);
	dlq_digest_add(dg, &e, false);
}

static const char *
render(enum dlq_alert_format f, size_t max)
{
	dlq_buf_reset(&text);
	dlq_digest_render(&d, f, "dlq-monitor on h", max, &text);
	return text.data;
}

START_TEST(same_signature_is_one_group_with_three_samples)
{
	int i;
	char id[16];

	for (i = 0; i < 10; i++) {
		snprintf(id, sizeof(id), "m%d", i);
		add(&d, "orders", "timeout #", id, 1000 + i);
	}
	ck_assert_uint_eq(d.n, 1);
	ck_assert_uint_eq(d.groups[0].count, 10);
	ck_assert_int_eq(d.groups[0].n_samples, 3);
	ck_assert_str_eq(d.groups[0].samples[2], "m2");
	ck_assert_int_eq(d.groups[0].first_ms, 1000);
	ck_assert_int_eq(d.groups[0].last_ms, 1009);
}
END_TEST

/* The monitor hashes the normalised text and hands over the text as the
 * producer wrote it (redacted): the group shows its first one. */
START_TEST(a_group_shows_its_first_error_text_as_written)
{
	struct dlq_alert_event e = { 0, "orders", "rejected", "", NULL, NULL,
	    0, NULL };
	char long_text[400];
	const char *t;
	size_t i;

	e.hash = dlq_signature_hash("orders", "rejected", "",
	    "timeout after #ms");
	e.error = "timeout after 3000ms";
	e.message_id = "m1";
	dlq_digest_add(&d, &e, false);
	e.error = "timeout after 3012ms";
	e.message_id = "m2";
	dlq_digest_add(&d, &e, false);
	ck_assert_uint_eq(d.n, 1);
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_msg(strstr(t, "• orders ×2 rejected: timeout after 3000ms "
	    "(sample m1, ") != NULL, "%s", t);
	ck_assert_ptr_null(strstr(t, "3012"));

	/* too long: cut between characters, and says so */
	for (i = 0; i + 2 < sizeof(long_text); i += 2)
		memcpy(long_text + i, "\xc3\xa9", 2);	/* é */
	long_text[i] = '\0';
	e.hash = 2;
	e.error = long_text;
	dlq_digest_add(&d, &e, false);
	ck_assert_uint_eq(d.n, 2);
	t = d.groups[1].error;
	ck_assert_uint_le(strlen(t), DLQ_SIGNATURE_TEXT_MAX);
	ck_assert_uint_ge(strlen(t), DLQ_SIGNATURE_TEXT_MAX - 4);
	ck_assert_str_eq(t + strlen(t) - 3, "…");
	ck_assert_int_eq((strlen(t) - 3) % 2, 0);
	ck_assert_mem_eq(t, long_text, strlen(t) - 3);
}
END_TEST

START_TEST(groups_over_the_cap_are_counted_not_stored)
{
	char err[32];
	int i;

	for (i = 0; i < 100; i++) {
		snprintf(err, sizeof(err), "error %d", i);
		add(&d, "q", err, NULL, i);
	}
	ck_assert_uint_eq(d.n, 4);		/* the cap */
	ck_assert_uint_eq(d.total, 100);
	ck_assert_uint_eq(d.other_count, 96);
	ck_assert_uint_eq(dlq_digest_groups(&d), 100);
	/* a flood of distinct errors: memory stays put, the group count
	 * saturates (a lower bound), no dead letter is lost from the total */
	for (i = 100; i < 50000; i++) {
		snprintf(err, sizeof(err), "error %d", i);
		add(&d, "q", err, NULL, i);
	}
	ck_assert_uint_eq(d.total, 50000);
	ck_assert_uint_eq(dlq_digest_groups(&d), 4 + DLQ_DIGEST_OTHER_MAX);
}
END_TEST

/* Dead letters given as "other" (a replica's batch over its cap) count
 * in the total and the line of groups not shown. */
START_TEST(other_dead_letters_count_without_a_group)
{
	struct dlq_digest o;

	ck_assert_int_eq(dlq_digest_init(&o, 4), 0);
	dlq_digest_add_other(&o, 0, 5);
	dlq_digest_add_other(&o, 7, 2);
	ck_assert(!dlq_digest_empty(&o));
	ck_assert_uint_eq(o.total, 7);
	ck_assert_uint_eq(o.other_count, 7);
	ck_assert_uint_eq(o.n, 0);
	ck_assert_uint_eq(dlq_digest_groups(&o), 2);
	dlq_digest_release(&o);
}
END_TEST

START_TEST(text_lists_largest_first_and_says_what_is_left_out)
{
	const char *t;
	int i;

	for (i = 0; i < 5; i++)
		add(&d, "small", "x", "s", 0);
	for (i = 0; i < 50; i++)
		add(&d, "big", "y", "b", 0);
	add(&d, "tiny", "z", "t", 0);
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_ptr_nonnull(strstr(t, "dlq-monitor on h: 56 dead letters in "
	    "3 groups\n"));
	ck_assert(strstr(t, "• big ×50") < strstr(t, "• small ×5"));
	ck_assert(strstr(t, "• small ×5") < strstr(t, "• tiny ×1"));
	ck_assert_ptr_null(strstr(t, "more group"));

	t = render(DLQ_FORMAT_PLAIN, 220);
	ck_assert_msg(strlen(t) <= 220, "%zu: %s", strlen(t), t);
	ck_assert_ptr_nonnull(strstr(t, "• big ×50"));
	ck_assert_msg(strstr(t, "… and 2 more groups (6 dead letters)") != NULL,
	    "%s", t);
}
END_TEST

/* A provider down for every queue that calls it: one line for the
 * cause, the queues named largest first, not one line per queue that
 * pushes the rest out of the digest. */
START_TEST(one_cause_in_several_queues_is_one_line)
{
	struct dlq_alert_event e = { 0, "q7", "rejected", "", "timeout", "m9",
	    5000, "timeout" };
	const char *t;
	char queue[16];
	int i, k;

	dlq_digest_release(&d);
	ck_assert_int_eq(dlq_digest_init(&d, 100), 0);
	for (i = 0; i < 7; i++) {
		snprintf(queue, sizeof(queue), "q%d", i);
		for (k = 0; k < 7 - i; k++)
			add(&d, queue, "timeout", i == 0 ? NULL : "m1", 1000);
	}
	add(&d, "q0", "refused", "m2", 2000);
	add(&d, "q0", "refused", "m3", 2000);
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_msg(strstr(t, ": 30 dead letters in 8 groups\n"
	    "• 7 queues ×28 rejected: timeout (q0 ×7, q1 ×6, q2 ×5, q3 ×4, "
	    "q4 ×3 and 2 more; sample m1, 00:00:01Z)\n"
	    "• q0 ×2 rejected: refused (sample m2, 00:00:02Z, sig ") != NULL,
	    "%s", t);
	t = render(DLQ_FORMAT_SLACK, 3500);
	ck_assert_msg(strstr(t, "groups\n• *7 queues* ×28 rejected") != NULL,
	    "%s", t);
	/* only the first line fits: the groups of the rest are counted */
	t = render(DLQ_FORMAT_PLAIN, 240);
	ck_assert_msg(strstr(t, "• 7 queues ×28") != NULL, "%s", t);
	ck_assert_msg(strstr(t, "\n… and 1 more group (2 dead letters)") !=
	    NULL, "%s", t);

	/* new in one of its queues: the cause is news; its times span all */
	e.hash = dlq_signature_hash("q7", "rejected", "", "timeout");
	dlq_digest_add(&d, &e, true);
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_msg(strstr(t, "• NEW 8 queues ×29 rejected: timeout (q0 ×7, "
	    "q1 ×6, q2 ×5, q3 ×4, q4 ×3 and 3 more; sample m1, "
	    "00:00:01Z–00:00:05Z)\n") != NULL, "%s", t);

	/* another reason or class is another cause; one not known (a group
	 * kept by an older worker) is its own */
	dlq_digest_clear(&d);
	add(&d, "q1", "timeout", "m1", 0);
	e.hash = dlq_signature_hash("q2", "rejected", "transient", "timeout");
	e.queue = "q2";
	e.class = "transient";
	dlq_digest_add(&d, &e, false);
	e.hash = dlq_signature_hash("q3", "expired", "", "timeout");
	e.queue = "q3";
	e.reason = "expired";
	e.class = "";
	dlq_digest_add(&d, &e, false);
	e.hash = dlq_signature_hash("q4", "expired", "", "timeout");
	e.normalized = NULL;
	e.queue = "q4";
	dlq_digest_add(&d, &e, false);
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_msg(strstr(t, "queues") == NULL, "%s", t);
	for (i = 1; i <= 4; i++) {
		snprintf(queue, sizeof(queue), "• q%d ×1 ", i);
		ck_assert_msg(strstr(t, queue) != NULL, "%s", t);
	}
}
END_TEST

/* An error text that mentions everyone pages no one: Slack's markup is
 * escaped, Google Chat's broken with a zero-width space after '<'. */
START_TEST(markup_in_an_error_text_is_not_markup)
{
	add(&d, "q<1>", "a & b <c>\nd <!channel> <users/all>", "id", 0);
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_SLACK, 3500),
	    "*q&lt;1&gt;* ×1 rejected: a &amp; b &lt;c&gt; d &lt;!channel&gt; "
	    "&lt;users/all&gt;"));
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_GOOGLE_CHAT, 3500),
	    "*q<\u200b1>* ×1 rejected: a & b <\u200bc> d <\u200b!channel> "
	    "<\u200busers/all>"));
	ck_assert_ptr_null(strstr(render(DLQ_FORMAT_GOOGLE_CHAT, 3500),
	    "<users/all>"));
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_PLAIN, 3500),
	    "• q<1> ×1"));
}
END_TEST

/* Mattermost and Rocket.Chat page a channel for "@channel" in any text
 * a webhook posts, and Mattermost reads Slack's "<!channel>" and
 * "<@U1>" too: a producer's error text pages no one, in any format. An
 * address's '@', or a URL's, is no mention and stays as it is. Discord's
 * body turns mentions off instead (webhook.c). */
START_TEST(mentions_in_an_error_text_page_no_one)
{
	static const enum dlq_alert_format formats[] = { DLQ_FORMAT_PLAIN,
	    DLQ_FORMAT_SLACK, DLQ_FORMAT_GOOGLE_CHAT };
	static const char *const paged[] = { "@channel", "@here", "@all",
	    "@alice", "@**all**", "<!channel>", "<@U1>", "@_x", "@Channel",
	    "@bob" };
	size_t i, k;

	add(&d, "q", "@channel (@here) x:@all for @alice @**all** <!channel> "
	    "<@U1> @_x ops@example.com a_@b @ @- redis://:***@cache:1 "
	    "x://:*@Channel http://h/@bob", "id", 0);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		render(formats[i], 3500);
		for (k = 0; k < sizeof(paged) / sizeof(paged[0]); k++)
			ck_assert_msg(strstr(text.data, paged[k]) == NULL,
			    "%s in %s", paged[k], text.data);
		ck_assert_msg(strstr(text.data, "@\u200bchannel (@\u200bhere) "
		    "x:@\u200ball for @\u200balice @\u200b**all** ") != NULL,
		    "%s", text.data);
		ck_assert_msg(strstr(text.data, " @\u200b_x ops@example.com "
		    "a_@b @ @- redis://:***@cache:1 x://:*@\u200bChannel "
		    "http://h/@\u200bbob (sample id") != NULL, "%s", text.data);
	}
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_PLAIN, 3500),
	    " <\u200b!channel> <@\u200bU1> "));
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_SLACK, 3500),
	    " &lt;!channel&gt; &lt;@\u200bU1&gt; "));
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_DISCORD, 3500),
	    "@channel (@here)"));
}
END_TEST

/* A chat shows an escape sequence, a bell or a direction override as
 * written by nobody: "\u202e" turns the rest of a line around, so that
 * "gnp.exe" reads as "exe.png". Each is shown as its escape, in every
 * format; other text, accents and emoji included, as it is. */
START_TEST(control_and_direction_characters_are_shown_escaped)
{
	static const enum dlq_alert_format formats[] = { DLQ_FORMAT_PLAIN,
	    DLQ_FORMAT_SLACK, DLQ_FORMAT_GOOGLE_CHAT };
	size_t i;

	add(&d, "q\x1b]0;x\x07", "\x1b[31mred\x1b[0m\tbell\x07 del\x7f "
	    "nel\xc2\x85 file \xe2\x80\xaegnp.exe \xe2\x81\xa6iso\xe2\x81\xa9 "
	    "rlm\xe2\x80\x8f alm\xd8\x9c caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\xa5",
	    "id\x1b", 0);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		render(formats[i], 3500);
		ck_assert_msg(strstr(text.data, "q\\e]0;x\\x07") != NULL, "%s",
		    text.data);
		ck_assert_msg(strstr(text.data, ": \\e[31mred\\e[0m bell\\x07 "
		    "del\\x7f nel\\u0085 file \\u202egnp.exe \\u2066iso\\u2069 "
		    "rlm\\u200f alm\\u061c caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\xa5 "
		    "(sample id\\e,") != NULL,
		    "%s", text.data);
		ck_assert_ptr_null(strchr(text.data, 0x1b));
		ck_assert_ptr_null(strstr(text.data, "\xe2\x80\xae"));
	}
}
END_TEST

/* Two groups whose texts differ by a zero-width space read as one, and
 * a text hidden in tag characters is not seen: shown escaped in every
 * format (the '<' that Google Chat's escape follows by a zero-width
 * space is the digest's own). */
START_TEST(invisible_characters_are_shown_escaped)
{
	static const enum dlq_alert_format formats[] = { DLQ_FORMAT_PLAIN,
	    DLQ_FORMAT_SLACK, DLQ_FORMAT_GOOGLE_CHAT, DLQ_FORMAT_DISCORD };
	size_t i;

	add(&d, "q", "no\xe2\x80\x8bpe \xef\xbb\xbf" "bom wj\xe2\x81\xa0 "
	    "shy\xc2\xad ls\xe2\x80\xa8 tag\xf3\xa0\x81\x81", "id", 0);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		render(formats[i], 3500);
		ck_assert_msg(strstr(text.data, ": no\\u200bpe \\ufeffbom "
		    "wj\\u2060 shy\\u00ad ls\\u2028 tag\\U000e0041 (") != NULL,
		    "%s", text.data);
		ck_assert_ptr_null(strstr(text.data, "\xf3\xa0"));
		ck_assert_ptr_null(strstr(text.data, "\xef\xbb\xbf"));
	}
}
END_TEST

/* Discord reads Markdown: an error text's "[x](url)" would hide a link,
 * "||x||" the text, "*" and "_" change it; each such character is shown
 * with a backslash, bold is "**", and a digest stays within Discord's
 * 2 000 characters whatever alert.max_chars says. */
START_TEST(discord_text_is_escaped_and_within_its_limit)
{
	char queue[64], err[64];
	int i;

	add(&d, "billing_usage", "see [docs](https://e.example) ||hid|| *b* "
	    "`c` <@1> ~~s~~ a\\b", "id_1", 0);
	render(DLQ_FORMAT_DISCORD, 3500);
	ck_assert_msg(strncmp(text.data, "**dlq-monitor on h**: 1 dead letter",
	    strlen("**dlq-monitor on h**: 1 dead letter")) == 0, "%s",
	    text.data);
	ck_assert_msg(strstr(text.data, "• **billing\\_usage** ×1 rejected: "
	    "see \\[docs\\](https://e.example) \\|\\|hid\\|\\| \\*b\\* \\`c\\` "
	    "\\<@1\\> \\~\\~s\\~\\~ a\\\\b (sample id\\_1, ") != NULL, "%s",
	    text.data);
	dlq_digest_release(&d);
	ck_assert_int_eq(dlq_digest_init(&d, 100), 0);
	for (i = 0; i < 100; i++) {
		snprintf(queue, sizeof(queue), "orders_%d", i);
		/* a cause of each queue's own: one line each */
		snprintf(err, sizeof(err), "failed in step %c%c", 'a' + i / 10,
		    'a' + i % 10);
		add(&d, queue, err, "m", i);
	}
	render(DLQ_FORMAT_DISCORD, 3500);
	ck_assert_uint_le(text.len, 2000);
	ck_assert_ptr_nonnull(strstr(text.data, "more groups"));
	render(DLQ_FORMAT_DISCORD, 800);
	ck_assert_uint_le(text.len, 800);
	render(DLQ_FORMAT_SLACK, 3500);
	ck_assert_uint_gt(text.len, 3000);
}
END_TEST

START_TEST(an_overlong_single_line_is_cut_not_dropped)
{
	char err[DLQ_SIGNATURE_TEXT_MAX + 1];
	const char *t;
	struct dlq_digest big;
	int i;

	memset(err, 'e', sizeof(err) - 1);
	err[sizeof(err) - 1] = '\0';
	ck_assert_int_eq(dlq_digest_init(&big, 4), 0);
	add(&big, "q", err, "id", 0);
	dlq_buf_reset(&text);
	dlq_digest_render(&big, DLQ_FORMAT_PLAIN, "t", 200, &text);
	t = text.data;
	ck_assert_uint_le(strlen(t), 200);
	ck_assert_ptr_nonnull(strstr(t, "• q ×1"));
	for (i = 0; i < 3; i++)
		add(&big, "q", err, "id", 0);
	dlq_digest_release(&big);
}
END_TEST

/* A cut line keeps its escapes whole: no "&am" for Slack, no dangling
 * backslash for Discord (it would escape the "…"). */
START_TEST(a_cut_line_never_splits_an_escape)
{
	char err[DLQ_SIGNATURE_TEXT_MAX + 1];
	const char *p, *cut;
	struct dlq_digest big;
	size_t max, run;

	memset(err, '&', sizeof(err) - 1);
	err[sizeof(err) - 1] = '\0';
	ck_assert_int_eq(dlq_digest_init(&big, 4), 0);
	add(&big, "q", err, "id", 0);
	for (max = 200; max < 240; max++) {
		dlq_buf_reset(&text);
		dlq_digest_render(&big, DLQ_FORMAT_SLACK, "t", max, &text);
		ck_assert_uint_le(text.len, max);
		ck_assert_ptr_nonnull(cut = strstr(text.data, "…"));
		for (p = text.data; (p = strchr(p, '&')) != NULL; p++)
			ck_assert_msg(strncmp(p, "&amp;", 5) == 0, "max %zu: %s",
			    max, text.data);
	}
	dlq_digest_release(&big);
	memset(err, '*', sizeof(err) - 1);
	ck_assert_int_eq(dlq_digest_init(&big, 4), 0);
	add(&big, "q", err, "id", 0);
	for (max = 200; max < 240; max++) {
		dlq_buf_reset(&text);
		dlq_digest_render(&big, DLQ_FORMAT_DISCORD, "t", max, &text);
		ck_assert_uint_le(text.len, max);
		ck_assert_ptr_nonnull(cut = strstr(text.data, "…"));
		for (run = 0; cut - run > text.data && cut[-1 - (long)run] ==
		    '\\'; run++)
			;
		ck_assert_msg(run % 2 == 0, "max %zu: %s", max, text.data);
		ck_assert_msg(cut[-1] == '*', "max %zu: %s", max, text.data);
	}
	dlq_digest_release(&big);
}
END_TEST

START_TEST(merge_keeps_every_count)
{
	struct dlq_digest other;
	int i;

	ck_assert_int_eq(dlq_digest_init(&other, 4), 0);
	for (i = 0; i < 3; i++)
		add(&d, "a", "x", "1", 10);
	for (i = 0; i < 4; i++)
		add(&other, "a", "x", "2", 20);
	add(&other, "b", "y", "3", 5);
	dlq_digest_merge(&d, &other);
	ck_assert_uint_eq(d.total, 8);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_uint_eq(d.groups[0].count, 7);
	ck_assert_int_eq(d.groups[0].n_samples, 2);
	ck_assert_int_eq(d.groups[0].last_ms, 20);
	dlq_digest_clear(&d);
	ck_assert(dlq_digest_empty(&d));
	add(&d, "a", "x", "1", 10);
	ck_assert_uint_eq(d.n, 1);
	dlq_digest_release(&other);
}
END_TEST

/* A digest held for a retry takes in one that overflowed too: groups it
 * has no room for join "other", each distinct cause counted once, and
 * every dead letter still counted; an earlier first sighting moves a
 * group's first time back. */
START_TEST(merging_full_digests_counts_every_cause_once)
{
	struct dlq_digest src;
	char err[16];
	int i;

	ck_assert_int_eq(dlq_digest_init(&src, 4), 0);
	for (i = 0; i < 6; i++) {
		snprintf(err, sizeof(err), "e%d", i);
		add(&d, "q", err, NULL, 10);
	}
	add(&src, "q", "e0", NULL, 1);
	add(&src, "q", "e5", NULL, 20);
	add(&src, "q", "e5", NULL, 20);
	for (i = 6; i < 10; i++) {
		snprintf(err, sizeof(err), "e%d", i);
		add(&src, "q", err, NULL, 20);
	}
	ck_assert_uint_eq(src.other_count, 2);
	dlq_digest_merge(&d, &src);
	ck_assert_uint_eq(d.total, 13);
	ck_assert_uint_eq(d.n, 4);
	ck_assert_uint_eq(d.groups[0].count, 2);
	ck_assert_int_eq(d.groups[0].first_ms, 1);
	ck_assert_uint_eq(d.other_count, 8);
	ck_assert_uint_eq(dlq_digest_groups(&d), 10);
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_PLAIN, 3500),
	    "… and 6 more groups (8 dead letters)"));
	dlq_digest_release(&src);
}
END_TEST

START_TEST(notices_have_their_own_sections_before_the_groups)
{
	const char *t;

	dlq_digest_notice(&d, DLQ_NOTICE_ESCALATION, NULL, "#7 orders: no owner "
	    "after 5h");
	ck_assert(!dlq_digest_empty(&d));
	t = render(DLQ_FORMAT_SLACK, 3500);
	ck_assert_str_eq(t, "*dlq-monitor on h*: no new dead letters\n"
	    "*Needs a decision*\n• #7 orders: no owner after 5h");
	add(&d, "orders", "timeout", "m1", 1000);
	dlq_digest_notice(&d, DLQ_NOTICE_REDRIVE, NULL,
	    "orders: redrive PAUSED <now>");
	t = render(DLQ_FORMAT_SLACK, 3500);
	ck_assert_ptr_nonnull(strstr(t, "1 dead letter in 1 group\n"
	    "*Needs a decision*\n• #7 orders: no owner after 5h\n"
	    "*Automatic redrive*\n• orders: redrive PAUSED &lt;now&gt;\n"));
	ck_assert_ptr_nonnull(strstr(t, "timeout"));
	dlq_digest_clear(&d);
	ck_assert(dlq_digest_empty(&d));
}
END_TEST

START_TEST(notices_are_bounded_counted_and_merged)
{
	struct dlq_digest other;
	const char *t, *p;
	char line[64];
	int i, shown;

	ck_assert_int_eq(dlq_digest_init(&other, 4), 0);
	for (i = 0; i < DLQ_DIGEST_NOTICES + 6; i++) {
		snprintf(line, sizeof(line), "#%d q: no owner", i);
		dlq_digest_notice(&other, DLQ_NOTICE_ESCALATION, NULL, line);
	}
	ck_assert_uint_eq(other.n_notices, DLQ_DIGEST_NOTICES);
	ck_assert_uint_eq(other.notices_over[DLQ_NOTICE_ESCALATION], 6);
	dlq_digest_merge(&d, &other);
	dlq_digest_release(&other);
	/* a small budget: what does not fit is counted, never lost */
	t = render(DLQ_FORMAT_PLAIN, 600);
	ck_assert_uint_le(strlen(t), 600);
	ck_assert_ptr_nonnull(strstr(t, "#0 q: no owner"));
	ck_assert_ptr_null(strstr(t, "#29 q"));
	/* shown + "… and N more" = every notice */
	for (shown = 0, p = t; (p = strstr(p, "• ")) != NULL; p++)
		shown++;
	ck_assert_ptr_nonnull(p = strstr(t, "… and "));
	ck_assert_int_eq(shown + atoi(p + strlen("… and ")),
	    DLQ_DIGEST_NOTICES + 6);
}
END_TEST

/* An archive outage is told by every DLQ it pauses: one line naming the
 * first, the other DLQs counted (each once, however often it tells it),
 * and no dead letter in the title. */
START_TEST(a_notice_given_again_is_one_line_with_its_count)
{
	struct dlq_digest other;
	const char *t;

	dlq_digest_notice(&d, DLQ_NOTICE_ARCHIVE, "a.dlq", "disk full; paused");
	dlq_digest_notice(&d, DLQ_NOTICE_ARCHIVE, "b.dlq", "disk full; paused");
	dlq_digest_notice(&d, DLQ_NOTICE_ARCHIVE, "a.dlq", "disk full; paused");
	dlq_digest_notice(&d, DLQ_NOTICE_ARCHIVE, "<c>.dlq", "locked; paused");
	dlq_digest_notice(&d, DLQ_NOTICE_REDRIVE, NULL, "q: redrive PAUSED");
	dlq_digest_notice(&d, DLQ_NOTICE_REDRIVE, NULL, "q: redrive PAUSED");
	ck_assert_uint_eq(d.n_notices, 3);
	t = render(DLQ_FORMAT_SLACK, 3500);
	ck_assert_str_eq(t, "*dlq-monitor on h*: no new dead letters\n"
	    "*Archive not writable*\n"
	    "• disk full; paused (a.dlq and 1 more)\n"
	    "• locked; paused (&lt;c&gt;.dlq)\n"
	    "*Automatic redrive*\n• q: redrive PAUSED (×2)");
	/* merged into a digest that has the line: counts carried */
	ck_assert_int_eq(dlq_digest_init(&other, 4), 0);
	dlq_digest_notice(&other, DLQ_NOTICE_ARCHIVE, "d.dlq", "disk full; paused");
	dlq_digest_notice(&other, DLQ_NOTICE_ARCHIVE, "b.dlq", "disk full; paused");
	add(&other, "orders", "timeout", "m1", 1000);
	dlq_digest_merge(&other, &d);
	dlq_digest_release(&d);
	d = other;
	t = render(DLQ_FORMAT_PLAIN, 3500);
	ck_assert_ptr_nonnull(strstr(t, "dlq-monitor on h: 1 dead letter in 1 "
	    "group\nArchive not writable\n• disk full; paused (d.dlq and 2 more)"
	    "\n• locked; paused (<c>.dlq)\n"));
	ck_assert_ptr_nonnull(strstr(t, "redrive PAUSED (×2)\n• orders ×1 "));
}
END_TEST

/* More DLQs than a notice counts one by one: it says "at least". */
START_TEST(a_notice_about_very_many_subjects_says_at_least)
{
	char dlq[32];
	int i;

	for (i = 0; i < DLQ_NOTICE_SUBJECTS + 44; i++) {
		snprintf(dlq, sizeof(dlq), "q%d.dlq", i);
		dlq_digest_notice(&d, DLQ_NOTICE_ARCHIVE, dlq, "disk full");
	}
	ck_assert_uint_eq(d.n_notices, 1);
	ck_assert_ptr_nonnull(strstr(render(DLQ_FORMAT_PLAIN, 3500),
	    "\n• disk full (q0.dlq and at least 255 more)"));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("groups");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, same_signature_is_one_group_with_three_samples);
	tcase_add_test(tc, a_group_shows_its_first_error_text_as_written);
	tcase_add_test(tc, groups_over_the_cap_are_counted_not_stored);
	tcase_add_test(tc, other_dead_letters_count_without_a_group);
	tcase_add_test(tc, text_lists_largest_first_and_says_what_is_left_out);
	tcase_add_test(tc, one_cause_in_several_queues_is_one_line);
	tcase_add_test(tc, markup_in_an_error_text_is_not_markup);
	tcase_add_test(tc, control_and_direction_characters_are_shown_escaped);
	tcase_add_test(tc, invisible_characters_are_shown_escaped);
	tcase_add_test(tc, mentions_in_an_error_text_page_no_one);
	tcase_add_test(tc, discord_text_is_escaped_and_within_its_limit);
	tcase_add_test(tc, an_overlong_single_line_is_cut_not_dropped);
	tcase_add_test(tc, a_cut_line_never_splits_an_escape);
	tcase_add_test(tc, merge_keeps_every_count);
	tcase_add_test(tc, merging_full_digests_counts_every_cause_once);
	tcase_add_test(tc, notices_have_their_own_sections_before_the_groups);
	tcase_add_test(tc, notices_are_bounded_counted_and_merged);
	tcase_add_test(tc, a_notice_given_again_is_one_line_with_its_count);
	tcase_add_test(tc, a_notice_about_very_many_subjects_says_at_least);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
