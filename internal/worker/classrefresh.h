/* classrefresh.h - the unresolved records' classes, given again when the
 * classification rules changed.
 *
 * A record's class and hint are given when it is archived, by the rules
 * of then. When a start finds other rules than the ones that classed the
 * records (a release with other built-in rules, a classify.rules entry
 * added or changed: archive_meta keeps a fingerprint of the rules), the
 * open and assigned records are classified again by the rules of now,
 * from what each keeps (source queue, death reason and the stored error
 * text: what the consumer classified), so that --class, replay.never and
 * redrive.classes go by the rules in effect: a cause a new rule calls
 * `security` is no longer redriven as `transient`. A changed class
 * changes the record's signature as well (the class is part of it), to
 * the one the cause's new dead letters get. The records replayed,
 * discarded or being replayed keep theirs: the class they were decided
 * under. Each change of class is audited (actor dlq-worker, command
 * reclassify, by ids: `show` lists it in the record's history). */
#ifndef DLQ_CLASSREFRESH_H
#define DLQ_CLASSREFRESH_H

struct dlq_archive;


#include "classify.h"

/* Classifies the open and assigned records of archive `db` (at `path`,
 * for the log) again with `k` when the rules noted in it differ from
 * k's, in one transaction, and notes k's. Logs `classes_refreshed` when
 * it read any record; 0. On an error (the disk full, the archive locked
 * past its busy timeout) nothing is changed, `classes_refresh_failed`
 * says SQLite's reason (tried again at the next start), and -1. */
int	dlq_classrefresh_run(struct dlq_archive *, const char *path,
	    const struct dlq_classifier *k);

#endif
