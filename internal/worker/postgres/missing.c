/* missing.c - the operations the PostgreSQL backend does not have: each
 * fails, saying so, as an archive error would. The refreshes of classes
 * and signatures after a change of the rules or of the signatures'
 * version do not run on it yet (the records keep the class and
 * signature they were archived with). The alert backlog is not asked of
 * a shared archive: its pending alert groups are staged in each batch's
 * transaction (replicas.c). Everything else is in the files beside. */
#include "pg.h"

#include <stdio.h>


static const char NOT_YET[] = "not available on a PostgreSQL archive yet";

static int
missing(struct dlq_pg *a, const char *op)
{
	(void)a;
	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "%s: %s", op, NOT_YET);
	return -1;
}

int64_t
dlq_pg_alert_backlog(struct dlq_pg *a, int64_t since_ms, int max_groups,
    struct dlq_digest *out)
{
	(void)since_ms;
	(void)max_groups;
	(void)out;
	return missing(a, "dlq_alert_backlog");
}

int
dlq_pg_classrefresh_run(struct dlq_pg *a, const char *path,
    const struct dlq_classifier *k)
{
	(void)path;
	(void)k;
	return missing(a, "dlq_classrefresh_run");
}

int
dlq_pg_sigrefresh_run(struct dlq_pg *a, const char *path)
{
	(void)path;
	return missing(a, "dlq_sigrefresh_run");
}
