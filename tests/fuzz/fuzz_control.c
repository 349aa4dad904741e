/* fuzz_control.c - libFuzzer target for the control-socket request
 * parser: one request line, any bytes, for each role, without an archive
 * (data commands answer with an error) and with an in-memory one. The
 * answer must always be one JSON line. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "config.h"
#include "requests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dlq_config cfg;
static struct dlq_archive *archive;	/* kept for the whole run */

static void
setup(void)
{
	struct dlq_buf errors;

	dlq_buf_init(&errors);
	if (dlq_config_load(&cfg, NULL, &errors) == -1)
		abort();
	dlq_buf_release(&errors);
	free(cfg.archive_path);		/* in memory: the worker refuses it */
	cfg.archive_path = strdup(":memory:");
	if ((archive = dlq_archive_open(&cfg)) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlq_buf out;
	cJSON *j;
	int role;

	if (archive == NULL)
		setup();
	if (size > DLQ_CONTROL_REQUEST_MAX)
		return 0;
	dlq_buf_init(&out);
	for (role = DLQ_ROLE_NONE; role <= DLQ_ROLE_ADMIN; role++) {
		dlq_buf_reset(&out);
		dlq_requests_handle(&cfg, role == DLQ_ROLE_VIEWER ? NULL : archive,
		    (const char *)data, size, (enum dlq_role)role, "fuzz", 1000,
		    -1, &out);
		/* always exactly one valid JSON line */
		if (out.len == 0 || out.data[out.len - 1] != '\n' ||
		    memchr(out.data, '\n', out.len - 1) != NULL)
			abort();
		if ((j = cJSON_ParseWithLength(out.data, out.len)) == NULL)
			abort();
		cJSON_Delete(j);
	}
	dlq_buf_release(&out);
	return 0;
}
