/* fuzz_deadletter.c - libFuzzer target for the dead-letter decoder.
 *
 * Input: a 4-byte big-endian length L, then L bytes of an encoded AMQP
 * field table (the headers, as on the wire), then the body. The headers
 * are decoded with rabbitmq-c's own decoder, exactly as a delivery's are;
 * what decodes is run through everything the worker does with a dead
 * letter before archiving it: decode, error text, signature, the log line
 * with redaction, the headers as JSON; then what shows it to people: the
 * digest in every format and dlqctl's terminal text, of the error text
 * and of the raw body. Nothing may crash, leak or read out of bounds
 * (run with ASan + UBSan), and the error text is valid UTF-8 without a
 * NUL, as the archive keeps it. */
#include <amqp.h>
#include <stdint.h>
#include <string.h>

#include "deadletter.h"
#include "digest.h"
#include "log.h"
#include "redact.h"
#include "signature.h"
#include "termtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* `text` in a digest of each format, as an error text and as a queue's
 * name, cut at a small size, and escaped for a terminal. */
static void
show(const char *text)
{
	static const enum dlq_alert_format formats[] = { DLQ_FORMAT_SLACK,
	    DLQ_FORMAT_GOOGLE_CHAT, DLQ_FORMAT_PLAIN, DLQ_FORMAT_DISCORD };
	struct dlq_alert_event e = { 0, "q", "rejected", "", text, text, 0,
	    text };
	struct dlq_digest g;
	struct dlq_buf b;
	size_t i;

	dlq_buf_init(&b);
	dlq_term_add(&b, text);
	if (dlq_term_width(text) < 0)
		__builtin_trap();
	if (dlq_digest_init(&g, 4) == 0) {
		e.hash = dlq_signature_hash("q", "rejected", "", text);
		dlq_digest_add(&g, &e, false);
		/* and in a queue of that name: one cause in two queues */
		e.queue = text;
		e.hash = dlq_signature_hash(text, "rejected", "", text);
		dlq_digest_add(&g, &e, false);
		for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			dlq_buf_reset(&b);
			dlq_digest_render(&g, formats[i], "t", 300, &b);
		}
		dlq_digest_release(&g);
	}
	dlq_buf_release(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *keys_v[] = { "password", "email", "phone", NULL };
	static const struct dlq_strlist keys = { keys_v, 3 };
	static char *err_v[] = { "x-error", "x-exception", NULL };
	static const struct dlq_strlist errh = { err_v, 2 };
	const struct dlq_redact r = { &keys, true, 8, 512,
	    dlq_redact_key_starts(&keys) };
	struct dlq_str dlq = { "q.dlq", 5 }, rk = { "q", 1 };
	amqp_basic_properties_t props;
	struct dlq_dead_letter d;
	struct dlq_buf line, err, sig, xdeath, scratch;
	amqp_pool_t pool;
	amqp_bytes_t enc, body;
	size_t off = 0, len;

	if (size < 4)
		return 0;
	len = (size_t)data[0] << 24 | (size_t)data[1] << 16 |
	    (size_t)data[2] << 8 | data[3];
	if (len > size - 4)
		len = size - 4;
	memset(&props, 0, sizeof(props));
	init_amqp_pool(&pool, 4096);
	enc.bytes = (void *)(data + 4);
	enc.len = len;
	if (len > 0 && amqp_decode_table(enc, &pool, &props.headers, &off) ==
	    AMQP_STATUS_OK)
		props._flags |= AMQP_BASIC_HEADERS_FLAG;
	body.bytes = (void *)(data + 4 + len);
	body.len = size - 4 - len;

	dlq_buf_init(&line);
	dlq_buf_init(&err);
	dlq_buf_init(&sig);
	dlq_buf_init(&xdeath);
	dlq_buf_init(&scratch);
	dlq_deadletter_decode(&d, &props, body, dlq, rk, &errh);
	dlq_deadletter_error_text(&d, &r, DLQ_ERROR_TEXT_MAX, &err);
	if (dlq_text_len(err.data, err.len) != err.len)	/* C string, UTF-8 */
		__builtin_trap();
	dlq_signature_normalize(err.data ? err.data : "", err.len, &sig);
	dlq_deadletter_xdeath_json(&d, &xdeath);
	dlq_deadletter_log_fields(&d, &r, &err, &xdeath, &scratch, &line);
	if (props._flags & AMQP_BASIC_HEADERS_FLAG)
		dlq_table_json(&line, &props.headers);
	show(err.data ? err.data : "");
	dlq_buf_reset(&scratch);
	dlq_buf_add(&scratch, body.bytes, body.len);
	show(scratch.data ? scratch.data : "");	/* up to its first NUL */
	/* bytes made valid UTF-8 (as the control answers are) stay as
	 * they are when made valid again */
	dlq_buf_reset(&err);
	dlq_buf_reset(&sig);
	dlq_buf_add_json_text(&err, body.bytes, body.len);
	dlq_buf_add_json_text(&sig, err.data, err.len);
	if (sig.len != err.len || (err.len > 0 && memcmp(sig.data, err.data,
	    err.len) != 0))
		__builtin_trap();
	dlq_buf_release(&line);
	dlq_buf_release(&err);
	dlq_buf_release(&sig);
	dlq_buf_release(&xdeath);
	dlq_buf_release(&scratch);
	empty_amqp_pool(&pool);
	return 0;
}
