/* check_deadletter.c - decoding every shape a DLQ delivery can take. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "deadletter.h"
#include "log.h"

static char *errh_v[] = { "x-error", "x-exception", NULL };
static const struct dlq_strlist errh = { errh_v, 2 };
static char *keys_v[] = { "password", NULL };
static const struct dlq_strlist keys = { keys_v, 1 };
static const struct dlq_redact R = { &keys, true, 8, 64, 0 };

static amqp_basic_properties_t props;
static amqp_table_entry_t hdr[8];
static struct dlq_dead_letter d;

static const struct dlq_str DLQ = { "orders.dlq", 10 };
static const struct dlq_str RK = { "orders", 6 };

static amqp_field_value_t
v_str(const char *s)
{
	amqp_field_value_t v;

	v.kind = AMQP_FIELD_KIND_UTF8;
	v.value.bytes = amqp_cstring_bytes(s);
	return v;
}

static amqp_field_value_t
v_i64(int64_t n)
{
	amqp_field_value_t v;

	v.kind = AMQP_FIELD_KIND_I64;
	v.value.i64 = n;
	return v;
}

static void
set(int i, const char *k, amqp_field_value_t v)
{
	hdr[i].key = amqp_cstring_bytes(k);
	hdr[i].value = v;
	if (i + 1 > props.headers.num_entries)
		props.headers.num_entries = i + 1;
}

static void
setup(void)
{
	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_HEADERS_FLAG;
	props.headers.entries = hdr;
	props.headers.num_entries = 0;
}

static void
decode(const char *body)
{
	amqp_bytes_t b = { strlen(body), (void *)body };

	dlq_deadletter_decode(&d, &props, b, DLQ, RK, &errh);
}

static bool
eq(struct dlq_str s, const char *want)
{
	return s.p != NULL && s.n == strlen(want) &&
	    memcmp(s.p, want, s.n) == 0;
}

/* An x-death as RabbitMQ writes it: newest first. */
static amqp_table_entry_t xd_e[2][6];
static amqp_field_value_t xd_v[2], rk_v[2];

static void
xdeath_entry(int i, const char *queue, const char *reason, int64_t count,
    uint64_t time)
{
	amqp_table_entry_t *e = xd_e[i];

	e[0].key = amqp_cstring_bytes("count");
	e[0].value = v_i64(count);
	e[1].key = amqp_cstring_bytes("reason");
	e[1].value = v_str(reason);
	e[2].key = amqp_cstring_bytes("queue");
	e[2].value = v_str(queue);
	e[3].key = amqp_cstring_bytes("time");
	e[3].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
	e[3].value.value.u64 = time;
	e[4].key = amqp_cstring_bytes("exchange");
	e[4].value = v_str("line_exchange");
	rk_v[i] = v_str(queue);
	e[5].key = amqp_cstring_bytes("routing-keys");
	e[5].value.kind = AMQP_FIELD_KIND_ARRAY;
	e[5].value.value.array.num_entries = 1;
	e[5].value.value.array.entries = &rk_v[i];
	xd_v[i].kind = AMQP_FIELD_KIND_TABLE;
	xd_v[i].value.table.num_entries = 6;
	xd_v[i].value.table.entries = e;
}

static amqp_field_value_t
v_array(amqp_field_value_t *items, int n)
{
	amqp_field_value_t v;

	v.kind = AMQP_FIELD_KIND_ARRAY;
	v.value.array.num_entries = n;
	v.value.array.entries = items;
	return v;
}

START_TEST(broker_xdeath_is_read_newest_first)
{
	xdeath_entry(0, "orders", "rejected", 1, 1764496800);
	xdeath_entry(1, "orders.retry", "expired", 3, 1764496700);
	set(0, "x-death", v_array(xd_v, 2));
	set(1, "x-first-death-queue", v_str("orders.retry"));
	decode("{}");
	ck_assert_uint_eq(d.n_xdeath, 2);
	ck_assert(eq(d.xdeath[0].queue, "orders"));
	ck_assert(eq(d.xdeath[0].reason, "rejected"));
	ck_assert_int_eq(d.xdeath[0].count, 1);
	ck_assert_int_eq(d.xdeath[0].time, 1764496800);
	ck_assert_int_eq(d.xdeath[1].count, 3);
	ck_assert(eq(d.xdeath[1].reason, "expired"));
	/* the queue that put it in the DLQ is the newest death */
	ck_assert(eq(d.queue, "orders"));
	ck_assert_uint_eq(d.n_problems, 0);
	/* and it first died at the oldest entry's time */
	ck_assert_int_eq(dlq_deadletter_first_death_ms(&d), 1764496700000LL);
}
END_TEST

START_TEST(retry_count_of_any_width_or_a_digit_string)
{
	static const struct { char kind; int64_t want; } ints[] = {
		{ AMQP_FIELD_KIND_I8, 3 }, { AMQP_FIELD_KIND_U8, 3 },
		{ AMQP_FIELD_KIND_I16, 3 }, { AMQP_FIELD_KIND_U16, 3 },
		{ AMQP_FIELD_KIND_I32, 3 }, { AMQP_FIELD_KIND_U32, 3 },
		{ AMQP_FIELD_KIND_I64, 3 }, { AMQP_FIELD_KIND_U64, 3 },
	};
	amqp_field_value_t v;
	size_t i;

	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		memset(&v, 0, sizeof(v));
		v.kind = (uint8_t)ints[i].kind;
		v.value.u64 = 0;
		switch (v.kind) {
		case AMQP_FIELD_KIND_I8: v.value.i8 = 3; break;
		case AMQP_FIELD_KIND_U8: v.value.u8 = 3; break;
		case AMQP_FIELD_KIND_I16: v.value.i16 = 3; break;
		case AMQP_FIELD_KIND_U16: v.value.u16 = 3; break;
		case AMQP_FIELD_KIND_I32: v.value.i32 = 3; break;
		case AMQP_FIELD_KIND_U32: v.value.u32 = 3; break;
		default: v.value.i64 = 3; break;
		}
		set(0, "x-retry-count", v);
		decode("");
		ck_assert_msg(d.has_retry_count, "kind %c", ints[i].kind);
		ck_assert_int_eq(d.retry_count, ints[i].want);
	}
	set(0, "x-retry-count", v_str("12"));
	decode("");
	ck_assert(d.has_retry_count);
	ck_assert_int_eq(d.retry_count, 12);
	v.kind = AMQP_FIELD_KIND_F64;
	v.value.f64 = 2.0;
	set(0, "x-retry-count", v);
	decode("");
	ck_assert_int_eq(d.retry_count, 2);
}
END_TEST

START_TEST(unreadable_counters_are_problems_not_crashes)
{
	amqp_field_value_t f;

	set(0, "x-retry-count", v_str("three"));
	f.kind = AMQP_FIELD_KIND_F64;
	f.value.f64 = 1.5;
	set(1, "x-delivery-count", f);
	decode("");
	ck_assert(!d.has_retry_count);
	ck_assert(!d.has_delivery_count);
	ck_assert_uint_eq(d.n_problems, 2);
	ck_assert_str_eq(d.problems[0], "x-retry-count is not an integer");
}
END_TEST

START_TEST(xdeath_of_the_wrong_type_is_noted)
{
	amqp_field_value_t items[2];

	set(0, "x-death", v_str("not an array"));
	decode("");
	ck_assert_uint_eq(d.n_xdeath, 0);
	ck_assert_str_eq(d.problems[0], "x-death: not an array");
	/* without any header naming it, the source queue is the DLX key */
	ck_assert(eq(d.queue, "orders"));

	items[0] = v_i64(5);
	xdeath_entry(1, "orders", "rejected", 1, 0);
	xd_e[1][0].value = v_str("one");	/* count as a string */
	items[1] = xd_v[1];
	set(0, "x-death", v_array(items, 2));
	decode("");
	ck_assert_uint_eq(d.n_xdeath, 1);
	ck_assert_int_eq(d.xdeath[0].count, -1);
	ck_assert_uint_eq(d.n_problems, 2);
	/* an entry without a time says nothing of when it first died */
	ck_assert_int_eq(dlq_deadletter_first_death_ms(&d), 0);
}
END_TEST

START_TEST(more_xdeath_entries_than_kept_are_counted)
{
	amqp_field_value_t items[40];
	int i;

	xdeath_entry(0, "q", "rejected", 1, 0);
	for (i = 0; i < 40; i++)
		items[i] = xd_v[0];
	set(0, "x-death", v_array(items, 40));
	decode("");
	ck_assert_uint_eq(d.n_xdeath, DLQ_XDEATH_MAX);
	ck_assert_uint_eq(d.n_xdeath_total, 40);
}
END_TEST

START_TEST(error_is_the_first_configured_header_present)
{
	struct dlq_buf b;

	set(0, "x-exception", v_str("second"));
	set(1, "x-error", v_str("mail bob@corp.io failed"));
	decode("");
	ck_assert_str_eq(d.error_header, "x-error");
	dlq_buf_init(&b);
	dlq_deadletter_error_text(&d, &R, 100, &b);
	ck_assert_str_eq(b.data, "mail *** failed");
	dlq_buf_release(&b);
}
END_TEST

/* An error header is bytes: a NUL or a byte that is not UTF-8 becomes
 * U+FFFD, so that the archive (a C string, SQLite TEXT) keeps the text
 * the log line shows and the signature is made of; a NUL far past the
 * kept text costs no copy of the whole header. */
START_TEST(error_bytes_not_text_become_u_fffd)
{
	static const char err[] = "db down\0 mail bob@corp.io \xff tail";
	amqp_field_value_t v;
	struct dlq_buf b;
	char *big = malloc(100000);

	v.kind = AMQP_FIELD_KIND_BYTES;
	v.value.bytes.bytes = (void *)err;
	v.value.bytes.len = sizeof(err) - 1;
	set(0, "x-error", v);
	decode("");
	dlq_buf_init(&b);
	dlq_deadletter_error_text(&d, &R, 100, &b);
	ck_assert_uint_eq(b.len, strlen(b.data));
	ck_assert_str_eq(b.data, "db down\xef\xbf\xbd mail *** "
	    "\xef\xbf\xbd tail");
	dlq_buf_reset(&b);
	memset(big, 'a', 100000);
	big[60000] = '\0';
	v.value.bytes.bytes = big;
	v.value.bytes.len = 100000;
	set(0, "x-error", v);
	decode("");
	dlq_deadletter_error_text(&d, &R, 100, &b);
	ck_assert_uint_eq(b.len, 100);
	ck_assert_uint_eq(strlen(b.data), 100);
	dlq_buf_release(&b);
	free(big);
}
END_TEST

START_TEST(no_headers_at_all)
{
	props._flags = AMQP_BASIC_MESSAGE_ID_FLAG;
	props.message_id = amqp_cstring_bytes("m-1");
	decode("payload");
	ck_assert(eq(d.message_id, "m-1"));
	ck_assert_ptr_null(d.correlation_id.p);
	ck_assert_ptr_null(d.error);
	ck_assert(!d.has_retry_count);
	ck_assert(eq(d.queue, "orders"));
}
END_TEST

START_TEST(log_fields_are_valid_json_with_redacted_payload)
{
	struct dlq_buf b, b2, e, x, scratch;
	char *line;

	xdeath_entry(0, "orders", "rejected", 2, 1764496800);
	set(0, "x-death", v_array(xd_v, 1));
	set(1, "x-retry-count", v_i64(3));
	set(2, "x-error", v_str("bad \"quote\"\n"));
	decode("{\"password\":\"hunter2\",\"n\":1}");
	dlq_buf_init(&b);
	dlq_buf_init(&e);
	dlq_deadletter_error_text(&d, &R, DLQ_ERROR_TEXT_MAX, &e);
	ck_assert(dlq_log_begin(&b, DLQ_LOG_INFO, "dead_letter"));
	dlq_buf_init(&x);
	dlq_deadletter_xdeath_json(&d, &x);
	dlq_buf_init(&scratch);
	dlq_deadletter_log_fields(&d, &R, &e, &x, &scratch, &b);
	dlq_buf_adds(&b, "}");
	line = b.data + strlen("{\"ts\":\"2026-11-30T10:00:00.000Z\",\"level\":"
	    "\"info\",\"event\":\"dead_letter\"");
	ck_assert_str_eq(line,
	    ",\"dlq\":\"orders.dlq\",\"queue\":\"orders\",\"message_id\":null,"
	    "\"correlation_id\":null,\"x_retry_count\":3,\"x_death\":[{\"count\":2,"
	    "\"reason\":\"rejected\",\"queue\":\"orders\",\"exchange\":"
	    "\"line_exchange\",\"routing_keys\":[\"orders\"],\"time\":"
	    "\"2025-11-30T10:00:00Z\"}],\"error\":\"bad \\\"quote\\\"\\n\","
	    "\"error_header\":\"x-error\",\"payload_bytes\":28,\"payload_kind\":"
	    "\"json\",\"payload\":\"{\\\"password\\\":\\\"***\\\",\\\"n\\\":1}\"}");
	/* the scratch buffer carries nothing over to the next line */
	dlq_buf_init(&b2);
	ck_assert(dlq_log_begin(&b2, DLQ_LOG_INFO, "dead_letter"));
	dlq_deadletter_log_fields(&d, &R, &e, &x, &scratch, &b2);
	dlq_buf_adds(&b2, "}");
	ck_assert_str_eq(b2.data + (line - b.data), line);
	dlq_buf_release(&b2);
	dlq_buf_release(&scratch);
	dlq_buf_release(&b);
	dlq_buf_release(&e);
	dlq_buf_release(&x);
}
END_TEST

START_TEST(structured_error_header_is_rendered_as_json)
{
	amqp_table_entry_t inner[1];
	amqp_field_value_t t;
	struct dlq_buf b;

	inner[0].key = amqp_cstring_bytes("message");
	inner[0].value = v_str("boom");
	t.kind = AMQP_FIELD_KIND_TABLE;
	t.value.table.num_entries = 1;
	t.value.table.entries = inner;
	set(0, "x-exception", t);
	decode("");
	dlq_buf_init(&b);
	dlq_deadletter_error_text(&d, &R, 100, &b);
	ck_assert_str_eq(b.data, "{\"message\":\"boom\"}");
	dlq_buf_release(&b);
}
END_TEST

/* Every AMQP field type a header may hold reads as JSON a user can
 * parse (dlqctl show --payload, dlq_headers_json): floats as the
 * shortest numbers that read back to the same value, infinities and NaN as null,
 * decimals with their places, unsigned 64-bit whole, a void as null,
 * bytes as a string, an array inside. */
START_TEST(every_header_type_reads_as_json)
{
	amqp_table_entry_t e[10];
	amqp_field_value_t arr[2];
	amqp_table_t t = { 10, e };
	struct dlq_buf b;
	int i = 0;

	e[i].key = amqp_cstring_bytes("f32");
	e[i].value.kind = AMQP_FIELD_KIND_F32;
	e[i++].value.value.f32 = 0.1f;
	e[i].key = amqp_cstring_bytes("f64");
	e[i].value.kind = AMQP_FIELD_KIND_F64;
	e[i++].value.value.f64 = 0.1;
	e[i].key = amqp_cstring_bytes("sum");
	e[i].value.kind = AMQP_FIELD_KIND_F64;
	e[i++].value.value.f64 = -(0.1 + 0.2);
	e[i].key = amqp_cstring_bytes("nan");
	e[i].value.kind = AMQP_FIELD_KIND_F64;
	e[i++].value.value.f64 = NAN;
	e[i].key = amqp_cstring_bytes("inf");
	e[i].value.kind = AMQP_FIELD_KIND_F32;
	e[i++].value.value.f32 = INFINITY;
	e[i].key = amqp_cstring_bytes("price");
	e[i].value.kind = AMQP_FIELD_KIND_DECIMAL;
	e[i].value.value.decimal.decimals = 2;
	e[i++].value.value.decimal.value = 12345;
	e[i].key = amqp_cstring_bytes("u64");
	e[i].value.kind = AMQP_FIELD_KIND_U64;
	e[i++].value.value.u64 = UINT64_MAX;
	e[i].key = amqp_cstring_bytes("void");
	e[i++].value.kind = AMQP_FIELD_KIND_VOID;
	e[i].key = amqp_cstring_bytes("raw");
	e[i].value.kind = AMQP_FIELD_KIND_BYTES;
	e[i++].value.value.bytes = amqp_cstring_bytes("a\"b");
	arr[0].kind = AMQP_FIELD_KIND_BOOLEAN;
	arr[0].value.boolean = 1;
	arr[1].kind = AMQP_FIELD_KIND_I8;
	arr[1].value.i8 = -3;
	e[i].key = amqp_cstring_bytes("list");
	e[i].value.kind = AMQP_FIELD_KIND_ARRAY;
	e[i].value.value.array.num_entries = 2;
	e[i++].value.value.array.entries = arr;
	dlq_buf_init(&b);
	dlq_table_json(&b, &t);
	ck_assert_str_eq(b.data, "{\"f32\":0.1,\"f64\":0.1,"
	    "\"sum\":-0.30000000000000004,"
	    "\"nan\":null,\"inf\":null,\"price\":123.45,"
	    "\"u64\":18446744073709551615,\"void\":null,\"raw\":\"a\\\"b\","
	    "\"list\":[true,-3]}");
	dlq_buf_release(&b);
}
END_TEST

/* The AMQP timestamp counts seconds; clients that write milliseconds,
 * microseconds or nanoseconds are read as such, and said to. */
START_TEST(a_timestamp_is_read_in_the_unit_its_client_wrote)
{
	const char *unit = NULL;

	ck_assert_int_eq(dlq_timestamp_ms(1796378400, &unit),
	    1796378400000LL);
	ck_assert_str_eq(unit, "seconds");
	ck_assert_int_eq(dlq_timestamp_ms(99999999999ULL, &unit),
	    99999999999000LL);			/* the year 5138, in seconds */
	ck_assert_str_eq(unit, "seconds");
	ck_assert_int_eq(dlq_timestamp_ms(1796378400123ULL, &unit),
	    1796378400123LL);
	ck_assert_str_eq(unit, "milliseconds");
	ck_assert_int_eq(dlq_timestamp_ms(1796378400123456ULL, &unit),
	    1796378400123LL);
	ck_assert_str_eq(unit, "microseconds");
	ck_assert_int_eq(dlq_timestamp_ms(1796378400123456789ULL, &unit),
	    1796378400123LL);
	ck_assert_str_eq(unit, "nanoseconds");
	ck_assert_int_eq(dlq_timestamp_ms(UINT64_MAX, &unit),
	    18446744073709LL);
	ck_assert_str_eq(unit, "nanoseconds");
	ck_assert_int_eq(dlq_timestamp_ms(0, NULL), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("deadletter");
	TCase *tc = tcase_create("decode");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, broker_xdeath_is_read_newest_first);
	tcase_add_test(tc, retry_count_of_any_width_or_a_digit_string);
	tcase_add_test(tc, unreadable_counters_are_problems_not_crashes);
	tcase_add_test(tc, xdeath_of_the_wrong_type_is_noted);
	tcase_add_test(tc, more_xdeath_entries_than_kept_are_counted);
	tcase_add_test(tc, error_is_the_first_configured_header_present);
	tcase_add_test(tc, error_bytes_not_text_become_u_fffd);
	tcase_add_test(tc, no_headers_at_all);
	tcase_add_test(tc, log_fields_are_valid_json_with_redacted_payload);
	tcase_add_test(tc, structured_error_header_is_rendered_as_json);
	tcase_add_test(tc, every_header_type_reads_as_json);
	tcase_add_test(tc, a_timestamp_is_read_in_the_unit_its_client_wrote);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
