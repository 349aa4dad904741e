/* sigrefresh.h - the archived records' failure signatures, computed again
 * when a release reads error texts better.
 *
 * A record's signature is computed once, when it is archived. After an
 * upgrade whose normalisation differs (DLQ_SIGNATURE_VERSION went up),
 * the records already there would keep the old one: one cause would read
 * as two groups in `dlqctl groups`, `--signature` would select only its
 * newer records, and its next dead letter would be announced as NEW. So
 * the first time a release opens the archive, every record's signature
 * is computed again from what the record keeps (source queue, death
 * reason, class and the error text as stored, which is what it was
 * computed from), in one transaction, and archive_meta notes the
 * version. The class stays as it was archived. */
#ifndef DLQ_SIGREFRESH_H
#define DLQ_SIGREFRESH_H

struct dlq_archive;

/* Brings the signatures of the archive (at `path`, for the log) to
 * DLQ_SIGNATURE_VERSION, once: a later call finds the version noted and
 * reads nothing else; an archive a newer release has noted a higher
 * version in is left as it is. Logs `signatures_refreshed` when it read
 * any record; 0. On an error (the disk full, the archive locked past
 * its busy timeout) nothing is changed, `signatures_refresh_failed` says
 * SQLite's reason, and -1. */
int	dlq_sigrefresh_run(struct dlq_archive *, const char *path);

#endif
