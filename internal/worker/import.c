/* import.c - an SQLite archive copied into a PostgreSQL archive
 * (import.h): table by table, chunk by chunk, then counted. */
#include "import.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "amqp.h"
#include "archive.h"
#include "proto.h"

static const char *const names[DLQ_IMPORT_TABLES] = {
	"dead_letters", "attempts", "audit", "redrive_circuits",
	"archive_meta",
};

const char *
dlq_import_table_name(enum dlq_import_table t)
{
	return t < DLQ_IMPORT_TABLES ? names[t] : "?";
}

static volatile sig_atomic_t stop_asked;

static void
ask_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}

/* Copies the chunks of `t` after what is there already; false on an
 * error (said) or a stop. */
static bool
copy_table(struct dlq_export *src, struct dlq_archive *dst,
    enum dlq_import_table t, int64_t total)
{
	struct dlq_buf json;
	int64_t after, last, copied = 0, t0 = dlq_now_ms();
	int n = 0;

	if ((after = dlq_archive_import_after(dst, t)) == -1) {
		fprintf(stderr, "dlq-worker: import: %s: %s\n", names[t],
		    dlq_archive_errmsg(dst));
		return false;
	}
	if (after > 0)
		printf("%s: going on after key %lld\n", names[t],
		    (long long)after);
	dlq_buf_init(&json);
	while (!stop_asked) {
		dlq_buf_reset(&json);
		last = after;
		if ((n = dlq_archive_export_rows(src, t, after, &json, &last)) <=
		    0)
			break;
		if (json.oom || dlq_archive_import_rows(dst, t, json.data) ==
		    -1) {
			fprintf(stderr, "dlq-worker: import: %s after key %lld: "
			    "%s\n", names[t], (long long)after, json.oom ?
			    "out of memory" : dlq_archive_errmsg(dst));
			dlq_buf_release(&json);
			return false;
		}
		copied += n;
		after = last;
		if (dlq_now_ms() - t0 >= 2000) {	/* now and then */
			printf("%s: %lld copied, up to key %lld of %lld rows\n",
			    names[t], (long long)copied, (long long)after,
			    (long long)total);
			fflush(stdout);
			t0 = dlq_now_ms();
		}
	}
	dlq_buf_release(&json);
	if (n == -1) {
		fprintf(stderr, "dlq-worker: import: reading %s: %s\n",
		    names[t], dlq_archive_export_errmsg(src));
		return false;
	}
	if (stop_asked) {
		printf("%s: stopped after key %lld; run the import again to go "
		    "on\n", names[t], (long long)after);
		return false;
	}
	printf("%s: %lld copied\n", names[t], (long long)copied);
	return true;
}

/* Counts each table on both sides; true when they are equal. */
static bool
verify(struct dlq_export *src, struct dlq_archive *dst)
{
	int64_t from, to;
	bool same = true;
	int t;

	for (t = 0; t < DLQ_IMPORT_TABLES; t++) {
		from = dlq_archive_export_count(src, t);
		to = dlq_archive_import_count(dst, t);
		printf("%-17s %lld in %s, %lld in PostgreSQL%s\n", names[t],
		    (long long)from, "the file", (long long)to, from == to &&
		    from >= 0 ? "" : ": NOT THE SAME");
		same &= from == to && from >= 0;
	}
	return same;
}

int
dlq_archive_import(const struct dlq_config *c, const char *path)
{
	struct dlq_export *src;
	struct dlq_archive *dst;
	char err[512], where[DLQ_ARCHIVE_WHERE_MAX];
	int64_t total;
	bool ok = true;
	int t;

	if (c->archive_url == NULL) {
		fputs("dlq-worker: --import-archive copies into the PostgreSQL "
		    "archive of archive.url (DLQ_ARCHIVE_URL), which is not "
		    "set\n", stderr);
		return DLQ_EXIT_USAGE;
	}
	if ((src = dlq_archive_export_open(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "dlq-worker: import: %s: %s\n", path, err);
		return DLQ_EXIT_ERROR;
	}
	if ((dst = dlq_archive_open(c)) == NULL) {	/* logged why */
		dlq_archive_export_close(src);
		return DLQ_EXIT_ERROR;
	}
	if (dlq_archive_import_begin(dst, err, sizeof(err)) == -1) {
		fprintf(stderr, "dlq-worker: import: %s\n", err);
		ok = false;
	}
	printf("importing %s into %s\n", path, dlq_archive_where(c, where,
	    sizeof(where)));
	signal(SIGINT, ask_stop);
	signal(SIGTERM, ask_stop);
	for (t = 0; ok && t < DLQ_IMPORT_TABLES; t++) {
		total = dlq_archive_export_count(src, t);
		ok = copy_table(src, dst, t, total);
	}
	if (ok && dlq_archive_import_finish(dst) == -1) {
		fprintf(stderr, "dlq-worker: import: %s\n",
		    dlq_archive_errmsg(dst));
		ok = false;
	}
	if (ok && !verify(src, dst)) {
		fputs("dlq-worker: import: the counts differ: did a worker "
		    "write into the PostgreSQL archive during the import?\n",
		    stderr);
		ok = false;
	}
	if (ok)
		puts("import verified: every table counts the same");
	dlq_archive_close(dst);
	dlq_archive_export_close(src);
	return ok ? DLQ_EXIT_OK : DLQ_EXIT_ERROR;
}
