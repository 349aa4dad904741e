/* parentdir.h - make the directories a file the worker creates lives in.
 *
 * The archive and the control socket default to paths under /var/lib and
 * /run whose directories a fresh machine lacks. Made here, with the mode
 * the caller asks for; one that cannot be made is named, as the error
 * that follows (SQLite's "unable to open database file", bind's ENOENT)
 * would not. */
#ifndef DLQ_PARENTDIR_H
#define DLQ_PARENTDIR_H

#include <stddef.h>
#include <sys/types.h>

/* Makes the missing directories above `path` with `mode`, whatever the
 * umask; those that exist keep theirs. Returns 0 when
 * they exist, or the errno of the first that could not be made; then,
 * unless `why` is NULL, writes "cannot create the directory D (reason)"
 * into it (`size` bytes). */
int	dlq_parentdir_make(const char *path, mode_t mode, char *why,
	    size_t size);

#endif
