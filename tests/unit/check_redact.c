/* check_redact.c - personal data stays out of what is printed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "config.h"
#include "redact.h"

static char *keys_v[] = { "password", "token", "email", "phone",
    "authorization", NULL };
static const struct dlq_strlist keys = { keys_v, 5 };
/* key_starts 0: the first letters of the keys are worked out at each
 * call (kept_key_starts_mask_what_is_masked_without: kept, as a
 * consumer keeps them) */
static const struct dlq_redact R = { &keys, true, 8, 4096, 0 };

/* Text longer than the reach past an apostrophe (APOSTROPHE_REACH). */
#define PROSE "was given for the account of the customer who called " \
	"the support line on Monday and asked why the renewal of the " \
	"plan was not taken"

static struct dlq_buf out;
static bool truncated;

static enum dlq_payload_kind
run(const struct dlq_redact *r, const char *s)
{
	dlq_buf_reset(&out);
	return dlq_redact_payload(r, s, strlen(s), &out, &truncated);
}

static const char *
text(void)
{
	return out.data ? out.data : "";
}

static void
setup(void)
{
	dlq_buf_init(&out);
}

static void
teardown(void)
{
	dlq_buf_release(&out);
}

/* Each text masked as text (an error text) reads as its pair says, by
 * `r` (R when NULL). */
static void
masks_each_as_said(const char *const (*cases)[2], size_t n,
    const struct dlq_redact *r)
{
	size_t i;

	for (i = 0; i < n; i++) {
		dlq_buf_reset(&out);
		dlq_redact_text(r != NULL ? r : &R, cases[i][0],
		    strlen(cases[i][0]), 1024, &out);
		ck_assert_str_eq(text(), cases[i][1]);
	}
}

START_TEST(masked_keys_lose_their_values_whatever_the_type)
{
	ck_assert_int_eq(run(&R, "{\"password\":\"hunter2\",\"id\":7}"),
	    DLQ_PAYLOAD_JSON);
	ck_assert_str_eq(text(), "{\"password\":\"***\",\"id\":7}");
	run(&R, "{\"Access_Token\": 12345, \"phone\": {\"cc\": 7, \"n\": \"x\"}}");
	ck_assert_str_eq(text(), "{\"Access_Token\": \"***\", \"phone\": \"***\"}");
	run(&R, "[{\"user_email\":[\"a\",\"b\"]},{\"ok\":true}]");
	ck_assert_str_eq(text(), "[{\"user_email\":\"***\"},{\"ok\":true}]");
	ck_assert(!truncated);
}
END_TEST

/* Form fields, header lists and parameters name their secret in a
 * value: the "value" beside a name member holding a mask key is masked,
 * the name member standing before it or after it. */
START_TEST(a_value_named_by_its_name_member_is_masked)
{
	run(&R, "{\"fields\":[{\"name\":\"password\",\"value\":\"hunter2\"},"
	    "{\"name\":\"city\",\"value\":\"Berlin\"},"
	    "{\"value\":[\"a\"],\"n\":2,\"Key\":\"Auth_Token\"}]}");
	ck_assert_str_eq(text(), "{\"fields\":[{\"name\":\"password\","
	    "\"value\":\"***\"},{\"name\":\"city\",\"value\":\"Berlin\"},"
	    "{\"value\":\"***\",\"n\":2,\"Key\":\"Auth_Token\"}]}");
	/* a name in another object, or not a name member, names nothing */
	run(&R, "{\"a\":{\"name\":\"token\"},\"value\":1,"
	    "\"b\":{\"value\":2,\"c\":{\"name\":\"token\"}},"
	    "\"d\":{\"label\":\"phone\",\"value\":3}}");
	ck_assert_str_eq(text(), "{\"a\":{\"name\":\"token\"},\"value\":1,"
	    "\"b\":{\"value\":2,\"c\":{\"name\":\"token\"}},"
	    "\"d\":{\"label\":\"phone\",\"value\":3}}");
	run(&R, "{\"b\":{\"value\":\"kept\"},\"name\":\"token\"}");
	ck_assert_str_eq(text(), "{\"b\":{\"value\":\"kept\"},"
	    "\"name\":\"token\"}");
	/* in a list, the name of the object before or after is not this
	 * object's */
	run(&R, "[{\"name\":\"email\"},{\"value\":\"kept\"},"
	    "{\"name\":\"email\"}]");
	ck_assert_str_eq(text(), "[{\"name\":\"email\"},{\"value\":\"kept\"},"
	    "{\"name\":\"email\"}]");
}
END_TEST

/* Strings are skipped 16 or 8 bytes at a time up to a quote or a
 * backslash: an escaped quote at any offset of a long string must not
 * end it, for a value kept and for one masked. */
START_TEST(escaped_quotes_in_long_strings_end_them_right)
{
	static const char a[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char in[256], want[256];
	int off;

	for (off = 0; off <= 40; off++) {
		snprintf(in, sizeof(in), "{\"note\":\"%.*s\\\"%.*s\","
		    "\"password\":\"%.*s\\\"x\",\"id\":7}", off, a, 40 - off, a,
		    off, a);
		snprintf(want, sizeof(want), "{\"note\":\"%.*s\\\"%.*s\","
		    "\"password\":\"***\",\"id\":7}", off, a, 40 - off, a);
		ck_assert_int_eq(run(&R, in), DLQ_PAYLOAD_JSON);
		ck_assert_str_eq(text(), want);
	}
}
END_TEST

START_TEST(values_that_look_like_keys_are_not_keys)
{
	run(&R, "{\"note\":\"password\",\"list\":[\"token\",\"x\"]}");
	ck_assert_str_eq(text(), "{\"note\":\"password\",\"list\":[\"token\",\"x\"]}");
}
END_TEST

START_TEST(emails_and_phone_numbers_in_text_are_masked)
{
	ck_assert_int_eq(run(&R, "mail jane.doe+x@mail.example.org now"),
	    DLQ_PAYLOAD_TEXT);
	ck_assert_str_eq(text(), "mail *** now");
	run(&R, "sms to +7 (916) 123-45-67, ref 12345678, code 1234");
	ck_assert_str_eq(text(), "sms to ***, ref ***, code 1234");
	run(&R, "{\"msg\":\"write to a@b.co\",\"n\":\"2026-11-30\"}");
	ck_assert_str_eq(text(), "{\"msg\":\"write to ***\",\"n\":\"2026-11-30\"}");
	run(&R, "not an email: a@b, @home, x@.com");
	ck_assert_str_eq(text(), "not an email: a@b, @home, x@.com");
	/* at the end of a sentence: the full stop is not part of it */
	run(&R, "could not deliver to jane@example.org. Retrying");
	ck_assert_str_eq(text(), "could not deliver to ***. Retrying");
	run(&R, "{\"e\":\"bounced: a.b@mail.example.co.uk.\"}");
	ck_assert_str_eq(text(), "{\"e\":\"bounced: ***.\"}");
	run(&R, "not one either: root@localhost.");
	ck_assert_str_eq(text(), "not one either: root@localhost.");
}
END_TEST

/* Only the start of a word can start an address or a number; whatever
 * ends a word (punctuation, a space, the end) is where the next begins. */
START_TEST(addresses_and_numbers_are_found_at_word_starts_only)
{
	run(&R, "a@b.co;c@d.io,+1 555 123 4567/12345678");
	ck_assert_str_eq(text(), "***;***,***/***");
	run(&R, "ref:12345678 id12345678 x@y.org");
	ck_assert_str_eq(text(), "ref:*** id12345678 ***");
	run(&R, "12345678@mail.example.org 12345678");
	ck_assert_str_eq(text(), "*** ***");
	run(&R, "{\"OldPassword\":\"x\",\"PASSWORD2\":1,\"tok\":\"z\","
	    "\"t\":\"w\"}");
	ck_assert_str_eq(text(), "{\"OldPassword\":\"***\",\"PASSWORD2\":"
	    "\"***\",\"tok\":\"z\",\"t\":\"w\"}");
}
END_TEST

/* `payload` redacted by `r` with its key_starts kept, as without. */
static void
assert_alike_with_starts_kept(struct dlq_redact r, const char *payload)
{
	char *without;

	r.key_starts = 0;
	run(&r, payload);
	without = strdup(text());
	r.key_starts = dlq_redact_key_starts(r.keys);
	run(&r, payload);
	ck_assert_str_eq(text(), without);
	free(without);
}

/* A consumer keeps the first letters of the mask keys (key_starts) for
 * all its dead letters: what it masks is what is masked without them. */
START_TEST(kept_key_starts_mask_what_is_masked_without)
{
	static char *odd_v[] = { "_id", "Token", "", NULL };
	static const struct dlq_strlist odd = { odd_v, 3 };
	static const char *const payloads[] = {
		"{\"OldPassword\":\"x\",\"PASSWORD2\":1,\"tok\":\"z\"}",
		"{\"user\":{\"e_mail\":\"a\",\"Authorization\":\"Bearer y\"}}",
		"{\"access_token\":\"abc\",\"x_id\":\"q\",\"ttl\":3}",
		"password=hunter2&phone=5551234&next=/",
		"{\"\":\"empty key\",\"zz\":\"none\"}",
	};
	struct dlq_redact kept = R, odd_r = R, odd_kept;
	size_t i;

	kept.key_starts = dlq_redact_key_starts(R.keys);
	ck_assert_uint_eq(kept.key_starts, 1u << ('p' - 'a') |
	    1u << ('t' - 'a') | 1u << ('e' - 'a') | 1u << ('a' - 'a'));
	odd_r.keys = &odd;
	odd_kept = odd_r;
	odd_kept.key_starts = dlq_redact_key_starts(&odd);
	ck_assert_uint_eq(odd_kept.key_starts, 1u << 31 | 1u << ('t' - 'a'));
	ck_assert_uint_eq(dlq_redact_key_starts(NULL), 0);
	for (i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		assert_alike_with_starts_kept(R, payloads[i]);
		assert_alike_with_starts_kept(odd_r, payloads[i]);
	}
	/* and each masks what it should */
	run(&kept, payloads[1]);
	ck_assert_str_eq(text(), "{\"user\":{\"e_mail\":\"a\","
	    "\"Authorization\":\"***\"}}");
	run(&odd_kept, payloads[2]);
	ck_assert_str_eq(text(), "{\"access_token\":\"***\",\"x_id\":\"***\","
	    "\"ttl\":3}");
}
END_TEST

START_TEST(output_is_cut_at_max_bytes_on_a_character_boundary)
{
	struct dlq_redact r = R;
	char big[10000];

	r.max_bytes = 5;
	ck_assert_int_eq(run(&r, "абвгд"), DLQ_PAYLOAD_TEXT);
	ck_assert_str_eq(text(), "аб");	/* 4 bytes: the 3rd char does not fit */
	ck_assert(truncated);

	memset(big, 'x', sizeof(big) - 1);
	big[0] = '[';
	big[sizeof(big) - 1] = '\0';
	r.max_bytes = 100;
	run(&r, big);
	ck_assert_uint_eq(out.len, 100);
	ck_assert(truncated);
}
END_TEST

START_TEST(an_email_cut_by_the_limit_is_still_masked)
{
	struct dlq_redact r = R;

	r.max_bytes = 12;
	/* the address starts inside the 12-byte budget and ends after it */
	run(&r, "to: jane.doe@example.com");
	ck_assert_str_eq(text(), "to: ***");
}
END_TEST

START_TEST(binary_and_empty_payloads_print_nothing)
{
	const char bin[] = { 'a', 0, (char)0xff, 'b' };

	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_redact_payload(&R, bin, sizeof(bin), &out,
	    &truncated), DLQ_PAYLOAD_BINARY);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(run(&R, ""), DLQ_PAYLOAD_EMPTY);
	ck_assert_uint_eq(out.len, 0);
}
END_TEST

START_TEST(broken_and_deep_json_never_leaks_or_crashes)
{
	char deep[400];
	int i;

	run(&R, "{\"password\":");
	ck_assert_str_eq(text(), "{\"password\":");
	run(&R, "{\"password\":\"unterminated");
	ck_assert_str_eq(text(), "{\"password\":\"***\"");
	run(&R, "{\"a\":\"\\\"password\\\"\",\"token\":\"t\"}");
	ck_assert_str_eq(text(), "{\"a\":\"\\\"password\\\"\",\"token\":\"***\"}");
	for (i = 0; i < 100; i++)
		deep[i] = '[';
	strcpy(deep + 100, "{\"password\":\"x\"}");
	run(&R, deep);
	ck_assert_ptr_null(strstr(text(), "\"x\""));
	ck_assert(truncated);
}
END_TEST

START_TEST(text_redaction_for_error_messages)
{
	dlq_buf_reset(&out);
	dlq_redact_text(&R, "invalid recipient 79161234567 for bob@corp.io",
	    45, 1024, &out);
	ck_assert_str_eq(text(), "invalid recipient *** for ***");
}
END_TEST

/* A masked key written in text with its value: an error that quotes a
 * URL, a header or a JSON fragment must not carry the secret along. */
START_TEST(secrets_after_their_key_in_text_are_masked)
{
	static const char *const cases[][2] = {
		{ "GET https://api.example.com/v1/push?token=abc123&x=1 failed",
		  "GET https://api.example.com/v1/push?token=***&x=1 failed" },
		{ "login as bob password = hunter2; retry",
		  "login as bob password = ***; retry" },
		{ "401 from provider (Authorization: Bearer eyJhbGciOi.x.y)",
		  "401 from provider (Authorization: Bearer ***)" },
		{ "body {\"access_token\": \"s3cr et\", \"n\": 1}",
		  "body {\"access_token\": \"***\", \"n\": 1}" },
		{ "X-Api-Token:AbC,next", "X-Api-Token:***,next" },
		{ "password: hunter2", "password: ***" },
		{ "token: 0123456789abcdefXYZ", "token: ***" },
		/* prose after "key: " stays readable; so does a bare key */
		{ "password: must be longer", "password: must be longer" },
		{ "token expired; token= ; token_revoked",
		  "token expired; token= ; token_revoked" },
		/* other keys keep their values */
		{ "ref=12345 id:abc", "ref=12345 id:abc" },
		/* a bearer credential needs no key */
		{ "rejected bearer abc.def-ghi, retrying",
		  "rejected bearer ***, retrying" },
		{ "Bearer  x", "Bearer  x" },
		/* so does a Basic one: base64 of user:password */
		{ "{\"auth\":\"Basic dXNlcjpwYXNz\"} refused",
		  "{\"auth\":\"Basic ***\"} refused" },
		{ "header Basic dXNlcjpwYXNzd29yZA== rejected",
		  "header Basic *** rejected" },
		{ "basic checks failed; Basic aGVsbG8gd29ybGQ=",
		  "basic checks failed; Basic aGVsbG8gd29ybGQ=" },
		/* a quote escaped inside the value does not end it */
		{ "body {\"password\":\"pa\\\"ss\",\"n\":1}",
		  "body {\"password\":\"***\",\"n\":1}" },
		{ "password='it\\'s' next", "password='***' next" },
		{ "token=\"C:\\\\\" after", "token=\"***\" after" },
		{ "token=\"open \\\" to the end", "token=\"***" },
		/* a backslash in a bare value is part of it; one escaping a
		 * quote or a control character of a JSON string is not */
		{ "token=ab\\cd next", "token=*** next" },
		{ "password=C:\\\\x\\y; retry", "password=***; retry" },
		{ "token=ab\\ncd", "token=***\\ncd" },
		{ "token=ab\\", "token=***\\" },
		/* percent-encoded, in a URL passed as a parameter */
		{ "cb https://app/x?next=https%3A%2F%2Fy%2F%3Ftoken%3Dabc123"
		  "%26x%3D1 failed", "cb https://app/x?next=https%3A%2F%2Fy%2F"
		  "%3Ftoken%3D***%26x%3D1 failed" },
		{ "s%3Dok%26Password%3Ahunter2%20x", "s%3Dok%26Password%3A***"
		  "%20x" },
		{ "a%3Db 100%3D x", "a%3Db 100%3D x" },
		{ "x%3Ftoken%3Dab/cd+ef%26y%3D2", "x%3Ftoken%3D***%26y%3D2" },
		/* an apostrophe within a single-quoted value does not end it */
		{ "password='it's mine' next", "password='***' next" },
		{ "{'password': 'x', 'user': 'bob'}",
		  "{'password': '***', 'user': 'bob'}" },
		{ "password='a'b", "password='***" },
		/* cut short, the rest of it too */
		{ "password='it's", "password='***" },
		{ "token='don't-tell', next", "token='***', next" },
		/* prose after an apostrophe, as far as the reach */
		{ "password='a'b " PROSE, "password='***'b " PROSE },
		/* a JSON object in text is masked as JSON is: a name/value
		 * pair by its name; one cut short, by its parts */
		{ "failed for {\"name\":\"password\",\"value\":\"hunter2\"} "
		  "at 10:42", "failed for {\"name\":\"password\",\"value\":"
		  "\"***\"} at 10:42" },
		{ "then { \"name\": \"token\", \"value\": \"t1\" }",
		  "then { \"name\": \"token\", \"value\": \"***\" }" },
		{ "cut {\"a\":{\"b\":1} {\"password\":\"x\"",
		  "cut {\"a\":{\"b\":1} {\"password\":\"***\"" },
		/* an object after the key: all of it, whatever its members'
		 * names, braces in its strings included */
		{ "token={\"a\":\"x}\",\"b\":1} after", "token=*** after" },
		{ "got {\"password\":{\"user\":\"bob\",\"pass\":\"x}\\\"\"},"
		  "\"n\":1}", "got {\"password\":\"***\",\"n\":1}" },
		{ "got {\\\"token\\\":{\\\"a\\\":{\\\"b\\\":\\\"}\\\"}},\\\"n\\\":1}",
		  "got {\\\"token\\\":***,\\\"n\\\":1}" },
		{ "token={\"cut\": \"x", "token=***" },
		/* but an LDAP password's scheme is no object */
		{ "userPassword: {SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
		  "userPassword: ***" },
	};

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	/* inside a JSON string value, with its quotes escaped */
	run(&R, "{\"msg\":\"sent {\\\"token\\\":\\\"t1\\\"} to x\"}");
	ck_assert_str_eq(text(),
	    "{\"msg\":\"sent {\\\"token\\\":\\\"***\\\"} to x\"}");
	/* ... and with an escaped quote inside that value (\\\" there) */
	run(&R, "{\"msg\":\"sent {\\\"token\\\":\\\"t1\\\\\\\"t2\\\"} x\"}");
	ck_assert_str_eq(text(),
	    "{\"msg\":\"sent {\\\"token\\\":\\\"***\\\"} x\"}");
}
END_TEST

/* A URL in an error text may carry its credentials: the password goes
 * (the whole user information when it is a token alone), the scheme,
 * user, host and path stay readable. */
START_TEST(credentials_in_urls_are_masked_hosts_kept)
{
	static const char *const cases[][2] = {
		{ "dial redis://:supersecret@cache:6379 refused",
		  "dial redis://:***@cache:6379 refused" },
		{ "postgres://app:s3cr%40t@db.internal/app: timeout",
		  "postgres://app:***@db.internal/app: timeout" },
		{ "amqp://guest:guest@localhost:5672/ closed",
		  "amqp://guest:***@localhost:5672/ closed" },
		{ "clone https://ghp_abcDEF123@github.com/x/y failed",
		  "clone https://***@github.com/x/y failed" },
		/* a raw '@' in the password: the last '@' ends it */
		{ "mongodb://u:p@ss@mongo:27017", "mongodb://u:***@mongo:27017" },
		{ "(http://u:pw@h)", "(http://u:***@h)" },
		/* no user information, or an empty password: nothing hidden */
		{ "GET https://api.example.com/v1/a@b failed",
		  "GET https://api.example.com/v1/a@b failed" },
		{ "http://u:@h and http://@h", "http://u:@h and http://@h" },
		{ "see http://host, then mail bob", "see http://host, then mail "
		  "bob" },
	};

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	/* in a JSON payload's string too */
	run(&R, "{\"dsn\":\"mysql://root:toor@db:3306/x\"}");
	ck_assert_str_eq(text(), "{\"dsn\":\"mysql://root:***@db:3306/x\"}");
}
END_TEST

/* XML and SOAP payloads name their secrets by element: the text of an
 * element named after a mask key, or by a name attribute, goes, and its
 * value attribute; its other attributes are masked as any text. Prose
 * with a word in angle brackets is no element. */
START_TEST(xml_elements_named_after_a_mask_key_lose_their_text)
{
	static const char *const cases[][2] = {
		{ "<user><password>hunter2</password><id>7</id></user>",
		  "<user><password>***</password><id>7</id></user>" },
		{ "<s:Auth><s:Token type=\"bearer\">abc</s:Token></s:Auth>",
		  "<s:Auth><s:Token type=\"bearer\">***</s:Token></s:Auth>" },
		{ "<user_phone>0176 1234 567</user_phone>",
		  "<user_phone>***</user_phone>" },
		{ "<Email note=\"a@b.com\">x</Email>",
		  "<Email note=\"***\">***</Email>" },
		{ "<password><![CDATA[p<a>ss]]></password>",
		  "<password>***</password>" },
		{ "<password/><token></token><token>\n  </token>",
		  "<password/><token></token><token>\n  </token>" },
		{ "<phone><cc>49</cc></phone>", "<phone><cc>49</cc></phone>" },
		{ "<a><token/>none</a>", "<a><token/>none</a>" },
		{ "</password>x <passwords>", "</password>x <passwords>" },
		{ "field <email> is missing", "field <email> is missing" },
		{ "1 < 2, token<3", "1 < 2, token<3" },
		/* named by an attribute: its text and its value attribute */
		{ "<form><field name=\"password\">hunter2</field>"
		  "<field name=\"city\">Berlin</field></form>",
		  "<form><field name=\"password\">***</field>"
		  "<field name=\"city\">Berlin</field></form>" },
		{ "<param name='Token' value='abc'/><param name=\"x\" "
		  "value=\"keep\"/>",
		  "<param name='Token' value='***'/><param name=\"x\" "
		  "value=\"keep\"/>" },
		{ "<password value=\"pv\">t</password>",
		  "<password value=\"***\">***</password>" },
		{ "<field name=\"password\"/> see <field name=\"token\"> here",
		  "<field name=\"password\"/> see <field name=\"token\"> here" },
	};
	char cut[1000];

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	ck_assert_int_eq(run(&R, "<?xml version=\"1.0\"?>\n<a><token>t1"
	    "</token></a>"), DLQ_PAYLOAD_TEXT);
	ck_assert_str_eq(text(), "<?xml version=\"1.0\"?>\n<a><token>***"
	    "</token></a>");
	/* in a JSON string, and in a text cut before the element ends */
	run(&R, "{\"body\":\"<a><Password>p1</Password></a>\"}");
	ck_assert_str_eq(text(), "{\"body\":\"<a><Password>***</Password>"
	    "</a>\"}");
	memset(cut, 'a', sizeof(cut));
	memcpy(cut, "<token>", 7);
	dlq_buf_reset(&out);
	dlq_redact_text(&R, cut, sizeof(cut), 10, &out);
	ck_assert_str_eq(text(), "<token>***");
}
END_TEST

/* Tokens, bank accounts and cards need no key before them: a JWT is a
 * credential, an IBAN names an account, a card number pays; an IBAN or
 * a card is told from an id of its shape by its check digits. */
START_TEST(jwts_ibans_and_cards_are_masked_wherever_they_stand)
{
	static const char *const cases[][2] = {
		{ "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dozj-_8U revoked",
		  "token *** revoked" },
		{ "rejected: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln.",
		  "rejected: ***." },
		{ "GET /v1/eyJhbGciOiJSUzI1NiJ9.e30.c2ln/x", "GET /v1/***/x" },
		{ "eyJust one word, eyJhbGciOiJ9.only-one-dot",
		  "eyJust one word, eyJhbGciOiJ9.only-one-dot" },
		{ "IBAN DE89370400440532013000 invalid", "IBAN *** invalid" },
		{ "to DE89 3704 0044 0532 0130 00, refused", "to ***, refused" },
		{ "GB82WEST12345698765432.", "***." },
		/* a group of four after a whole IBAN is the next word */
		{ "BE68539007547034 2024 report", "*** 2024 report" },
		{ "BE68 5390 0754 7034 2024 report", "*** 2024 report" },
		/* the shape without the check, or inside a word: left alone */
		{ "order DE00370400440532013000 lost",
		  "order DE00370400440532013000 lost" },
		{ "xDE89370400440532013000 DE89370400440532013000x",
		  "xDE89370400440532013000 DE89370400440532013000x" },
		{ "de89370400440532013000", "de89370400440532013000" },
		/* cards in groups, which the digit runs rule cannot see */
		{ "pay 4111 1111 1111 1111 failed", "pay *** failed" },
		{ "card=4111 1111 1111 1111 refused; password: 4111 1111 1111 "
		    "1111", "card=*** refused; password: ***" },
		{ "token: DE89 3704 0044 0532 0130 00 refused",
		  "token: *** refused" },
		{ "pay 4111-1111-1111-1111 failed", "pay *** failed" },
		{ "amex 3782 822463 10005.", "amex ***." },
		{ "5555 5555 5555 4444 2024 report", "*** 2024 report" },
		{ "4111 1111 1111 1111x", "4111 1111 1111 1111x" },
	};
	struct dlq_redact no_digits = R;

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	run(&R, "{\"note\":\"pay to NL91ABNA0417164300\",\"n\":1}");
	ck_assert_str_eq(text(), "{\"note\":\"pay to ***\",\"n\":1}");
	/* with digit runs left alone, a whole card number is still masked;
	 * the shape without the check digits, or with mixed separators,
	 * is no card */
	no_digits.digits_min = 0;
	run(&no_digits, "card 4111111111111111, order 12345678901, at "
	    "1796231243009");
	ck_assert_str_eq(text(), "card ***, order 12345678901, at "
	    "1796231243009");
	run(&no_digits, "4111 1111 1111 1112 or 4111 1111-1111 1111");
	ck_assert_str_eq(text(), "4111 1111 1111 1112 or 4111 1111-1111 1111");
}
END_TEST

/* The keys of well-known services, by prefix and length, and the body
 * of a PEM private key are credentials whatever key they stand after:
 * masked. A word that only starts the same way, and a certificate
 * (public), stay. */
START_TEST(service_keys_and_private_keys_are_masked_wherever_they_stand)
{
	static const char *const cases[][2] = {
		{ "stripe: sk_live_51H8abcdefghijklmnopqrstu invalid",
		  "stripe: *** invalid" },
		{ "push ghp_0123456789abcdefghijABCDEFGHIJ012345 denied.",
		  "push *** denied." },
		{ "slack xoxb-1234-5678-abcdefghijkl revoked",
		  "slack *** revoked" },
		{ "id AKIAIOSFODNN7EXAMPLE.", "id ***." },
		{ "key AIzaSyA-0123456789abcdefghijklmnopqrstu ok", "key *** ok" },
		{ "glpat-0123456789abcdefghij", "***" },
		/* the prefix alone, too short, too long, or inside a word */
		{ "sk_live_ is not set", "sk_live_ is not set" },
		{ "ghp_short", "ghp_short" },
		{ "AKIAIOSFODNN7EXAMPLE1", "AKIAIOSFODNN7EXAMPLE1" },
		{ "mask_live_0123456789abcdef", "mask_live_0123456789abcdef" },
		{ "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n"
		  "-----END RSA PRIVATE KEY-----",
		  "-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE "
		  "KEY-----" },
		/* cut before its end: all of the rest goes */
		{ "key -----BEGIN PRIVATE KEY----- MIIEvQIBADANBg",
		  "key -----BEGIN PRIVATE KEY-----***" },
		{ "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----" },
		{ "-----BEGIN PRIVATE KEY with no end of its label",
		  "-----BEGIN PRIVATE KEY with no end of its label" },
	};

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	/* in a JSON string, its newlines escaped */
	run(&R, "{\"tls\":\"-----BEGIN EC PRIVATE KEY-----\\nMHc\\n-----END "
	    "EC PRIVATE KEY-----\\n\"}");
	ck_assert_str_eq(text(), "{\"tls\":\"-----BEGIN EC PRIVATE KEY-----***"
	    "-----END EC PRIVATE KEY-----\\n\"}");
	/* and after other text, on a line of its own */
	run(&R, "{\"pem\":\"cert\\n-----BEGIN PRIVATE KEY-----\\nMII\\n"
	    "-----END PRIVATE KEY-----\"}");
	ck_assert_str_eq(text(), "{\"pem\":\"cert\\n-----BEGIN PRIVATE "
	    "KEY-----***-----END PRIVATE KEY-----\"}");
}
END_TEST

/* Error texts write phone numbers as people do, in groups: masked as a
 * run of digits is. Dates, spans of years, IPv4 addresses and decimal
 * numbers have the shape of such groups and stay readable. */
START_TEST(phone_numbers_in_groups_are_masked_dates_kept)
{
	static const char *const cases[][2] = {
		{ "invalid phone 555-123-4567", "invalid phone ***" },
		{ "call (555) 123-4567 now; (555)123-4567.",
		  "call (*** now; (***." },
		{ "tel 030 1234 5678, 06.12.34.56.78 or 0171 1234567",
		  "tel ***, *** or ***" },
		{ "1-800-555-0199 busy 3 times, ssn 123-45-6789",
		  "*** busy 3 times, ssn ***" },
		{ "phone 555-123-4567 12 attempts", "phone *** 12 attempts" },
		{ "ids 1234 5678 9012 3456 7890", "ids ***" },
		{ "not a card 4111 1111 1111 1112", "not a card ***" },
		/* too few digits, inside a word, or another separator on */
		{ "code 123-4567, 12 34 567", "code 123-4567, 12 34 567" },
		{ "x555-123-4567 555-123-4567y 555-123-4567-89x",
		  "x555-123-4567 555-123-4567y 555-123-4567-89x" },
		{ "ref 5551 2345-67, total 1234 5678.90, steps 1 2 3 4 5 6 7 8",
		  "ref 5551 2345-67, total 1234 5678.90, steps 1 2 3 4 5 6 7 8" },
		/* shapes that are no phone number */
		{ "at 2026-12-02 10:42:11, due 02.12.2026, valid 2024-2025",
		  "at 2026-12-02 10:42:11, due 02.12.2026, valid 2024-2025" },
		{ "connect 192.168.100.200:5672 refused after 12345.678 ms",
		  "connect 192.168.100.200:5672 refused after 12345.678 ms" },
	};
	struct dlq_redact no_digits = R;

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), NULL);
	run(&R, "{\"to\":\"555 123 4567\",\"n\":\"555-1234\"}");
	ck_assert_str_eq(text(), "{\"to\":\"***\",\"n\":\"555-1234\"}");
	no_digits.digits_min = 0;
	run(&no_digits, "call 555-123-4567");
	ck_assert_str_eq(text(), "call 555-123-4567");
}
END_TEST

/* What the worker masks without a configured list: card security codes,
 * one-time codes (too short for the digit rule), identity documents and
 * dates of birth go with the secrets and contact data. */
START_TEST(the_default_keys_mask_card_codes_and_one_time_codes)
{
	struct dlq_config c;
	struct dlq_buf errors;
	struct dlq_redact d;

	memset(&c, 0, sizeof(c));
	dlq_buf_init(&errors);
	ck_assert_int_eq(dlq_config_load(&c, NULL, &errors), 0);
	d = (struct dlq_redact){ &c.mask_keys, c.mask_emails,
	    (int)c.mask_digits_min, 4096, dlq_redact_key_starts(&c.mask_keys) };
	run(&d, "{\"cvv\":123,\"card_cvc\":\"123\",\"otp\":\"482193\","
	    "\"passport_no\":\"AB12345\",\"date_of_birth\":\"1990-04-12\","
	    "\"dob\":\"1990-04-12\",\"pass\":\"hunter2\",\"passphrase\":"
	    "\"a b c\",\"order\":42}");
	ck_assert_str_eq(text(), "{\"cvv\":\"***\",\"card_cvc\":\"***\","
	    "\"otp\":\"***\",\"passport_no\":\"***\","
	    "\"date_of_birth\":\"***\",\"dob\":\"***\",\"pass\":\"***\","
	    "\"passphrase\":\"***\",\"order\":42}");
	dlq_buf_reset(&out);
	dlq_redact_text(&d, "otp=482193 rejected", 19, 1024, &out);
	ck_assert_str_eq(text(), "otp=*** rejected");
	dlq_config_release(&c);
	dlq_buf_release(&errors);
}
END_TEST

/* A cookie header written in an error text loses all its cookies,
 * whatever their names, up to the end of its line. */
START_TEST(a_cookie_header_is_masked_to_the_end_of_its_line)
{
	static char *cookie_v[] = { "cookie", NULL };
	static const struct dlq_strlist cookie = { cookie_v, 1 };
	const struct dlq_redact c = { &cookie, true, 8, 4096, 0 };
	static const char *const cases[][2] = {
		{ "sent Cookie: sid=abc1; _ga=GA1.2.3; uid=42\r\nHost: x",
		  "sent Cookie: ***\r\nHost: x" },
		{ "Set-Cookie: SID=abc; Path=/; HttpOnly", "Set-Cookie: ***" },
		{ "{\"h\":\"Cookie: a=1; b=2\\nX: y\"}",
		  "{\"h\":\"Cookie: ***\\nX: y\"}" },
		/* as a parameter, one value as any key's */
		{ "cookie=a1; theme=dark", "cookie=***; theme=dark" },
	};

	masks_each_as_said(cases, sizeof(cases) / sizeof(cases[0]), &c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("redact");
	TCase *tc = tcase_create("payload");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, masked_keys_lose_their_values_whatever_the_type);
	tcase_add_test(tc, values_that_look_like_keys_are_not_keys);
	tcase_add_test(tc, escaped_quotes_in_long_strings_end_them_right);
	tcase_add_test(tc, emails_and_phone_numbers_in_text_are_masked);
	tcase_add_test(tc, addresses_and_numbers_are_found_at_word_starts_only);
	tcase_add_test(tc, kept_key_starts_mask_what_is_masked_without);
	tcase_add_test(tc, output_is_cut_at_max_bytes_on_a_character_boundary);
	tcase_add_test(tc, an_email_cut_by_the_limit_is_still_masked);
	tcase_add_test(tc, binary_and_empty_payloads_print_nothing);
	tcase_add_test(tc, broken_and_deep_json_never_leaks_or_crashes);
	tcase_add_test(tc, text_redaction_for_error_messages);
	tcase_add_test(tc, secrets_after_their_key_in_text_are_masked);
	tcase_add_test(tc, credentials_in_urls_are_masked_hosts_kept);
	tcase_add_test(tc,
	    service_keys_and_private_keys_are_masked_wherever_they_stand);
	tcase_add_test(tc, jwts_ibans_and_cards_are_masked_wherever_they_stand);
	tcase_add_test(tc, phone_numbers_in_groups_are_masked_dates_kept);
	tcase_add_test(tc, xml_elements_named_after_a_mask_key_lose_their_text);
	tcase_add_test(tc, a_value_named_by_its_name_member_is_masked);
	tcase_add_test(tc, the_default_keys_mask_card_codes_and_one_time_codes);
	tcase_add_test(tc, a_cookie_header_is_masked_to_the_end_of_its_line);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
