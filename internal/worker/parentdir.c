/* parentdir.c - make the directories a file the worker creates lives in. */
#include "parentdir.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Makes `dir` with exactly `mode`: mkdir(2) takes the umask off it, and
 * a worker started with UMask=0077 would make the socket's directory one
 * that no viewer can enter. Returns 0 or the errno. */
static int
make_one(const char *dir, mode_t mode)
{
	if (mkdir(dir, mode) != 0)
		return errno;
	return chmod(dir, mode) == 0 ? 0 : errno;
}

/* `failed` is named by the deepest call that fails: a caller leaves it
 * as it is once set. */
static int
make(const char *path, mode_t mode, char *failed, size_t size)
{
	char *copy = strdup(path), *dir;
	int err;

	if (copy == NULL)
		return 0;	/* what comes next says what fails */
	dir = dirname(copy);
	err = make_one(dir, mode);
	if (err == ENOENT && (err = make(dir, mode, failed, size)) == 0)
		err = make_one(dir, mode);
	if (err == EEXIST)	/* before a denied write: it is there */
		err = 0;
	else if (err != 0 && failed[0] == '\0')
		snprintf(failed, size, "%s", dir);
	free(copy);
	return err;
}

int
dlq_parentdir_make(const char *path, mode_t mode, char *why, size_t size)
{
	char dir[PATH_MAX] = "", reason[64];
	int err = make(path, mode, dir, sizeof(dir));

	if (err != 0 && why != NULL)
		snprintf(why, size, "cannot create the directory %.200s (%s)",
		    dir, strerror_r(err, reason, sizeof(reason)));
	return err;
}
