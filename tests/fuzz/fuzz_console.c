/* fuzz_console.c - libFuzzer target for the console's door: a request's
 * method, path, headers and body from any bytes (lines of the input:
 * METHOD, URL, Authorization, cookie, X-CSRF-Token, Content-Type, then
 * the body), handled with users and an in-memory archive. The answer
 * must be a known status, and JSON whenever it says so. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "config.h"
#include "console.h"
#include "token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dlq_config cfg;
static struct dlq_archive *archive;
static struct dlq_console *console;

/* The token "fuzz-operator" of user fuzz, and a viewer. */
static void
setup(void)
{
	char path[] = "/tmp/dlq-fuzz-tokens-XXXXXX", hash[DLQ_TOKEN_HASH_LEN + 1],
	    why[256];
	struct dlq_buf errors;
	FILE *f;
	int fd;

	dlq_buf_init(&errors);
	if (dlq_config_load(&cfg, NULL, &errors) == -1)
		abort();
	dlq_buf_release(&errors);
	free(cfg.archive_path);
	cfg.archive_path = strdup(":memory:");
	if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL)
		abort();
	dlq_token_hash("fuzz-operator", 13, hash);
	fprintf(f, "fuzz operator %s\n", hash);
	dlq_token_hash("fuzz-viewer", 11, hash);
	fprintf(f, "vic viewer %s\nsso admin -\n", hash);
	fclose(f);
	cfg.console_tokens_file = strdup(path);
	if ((archive = dlq_archive_open(&cfg)) == NULL ||
	    (console = dlq_console_new(&cfg, archive, why, sizeof(why))) == NULL)
		abort();
}

/* The next line of the input, NUL-ended in place; NULL when it is "-". */
static char *
next(char **p, char *end)
{
	char *s = *p, *nl;

	if (s >= end)
		return NULL;
	if ((nl = memchr(s, '\n', (size_t)(end - s))) == NULL)
		nl = end;
	*nl = '\0';
	*p = nl + 1;
	return strcmp(s, "-") == 0 ? NULL : s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned ok[] = { 200, 202, 303, 304, 400, 401, 403, 404,
	    405, 409, 429, 500, 503 };
	struct dlq_console_req q;
	struct dlq_console_res res;
	struct dlq_buf body;
	struct dlq_kv args[2] = { { "limit", "5" }, { "status", "open" } };
	char *copy, *p, *end, peer[32];
	cJSON *j;
	size_t i;

	if (console == NULL)
		setup();
	if (size > DLQ_CONSOLE_BODY_MAX)
		return 0;
	if ((copy = malloc(size + 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	p = copy;
	end = copy + size;
	memset(&q, 0, sizeof(q));
	q.method = next(&p, end);
	q.url = next(&p, end);
	if (q.method == NULL || q.url == NULL) {
		free(copy);
		return 0;
	}
	q.authorization = next(&p, end);
	q.session = next(&p, end);
	q.csrf = next(&p, end);
	q.content_type = next(&p, end);
	q.proxy_user = NULL;
	/* many addresses: failed logins of one would soon shut the door
	 * (429) on every input after it */
	snprintf(peer, sizeof(peer), "10.0.%u.%u", (unsigned)(size % 250),
	    (unsigned)(size > 0 ? data[0] : 0));
	q.peer = peer;
	q.args = args;
	q.nargs = size % 3 == 0 ? 2 : 0;
	q.body = p < end ? p : NULL;
	q.body_len = p < end ? (size_t)(end - p) : 0;
	dlq_buf_init(&body);
	memset(&res, 0, sizeof(res));
	res.body = &body;
	res.status = 500;
	res.type = "text/plain";
	dlq_console_handle(console, &q, &res);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]) && ok[i] != res.status; i++)
		;
	if (i == sizeof(ok) / sizeof(ok[0]))
		abort();
	if (res.fixed == NULL && strcmp(res.type, "application/json") == 0 &&
	    res.status != 304) {
		if ((j = cJSON_ParseWithLength(body.data, body.len)) == NULL)
			abort();
		cJSON_Delete(j);
	}
	dlq_buf_release(&body);
	free(copy);
	return 0;
}
