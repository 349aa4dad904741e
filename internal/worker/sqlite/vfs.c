/* vfs.c - the archive's SQLite files, written in fewer and larger calls.
 *
 * SQLite writes a WAL frame with two pwrite(2) calls (its 24-byte header,
 * then the page), a commit as dozens of frames one after the other, and a
 * checkpoint copies pages into the database file in ascending order. On
 * the virtual machines this runs on a system call costs more than copying
 * a page, and these calls were most of the worker's kernel time per dead
 * letter. This shim over the default VFS holds a run of contiguous writes
 * to a database or WAL file in memory and writes it with one call when
 * anything else happens to that file, or when the run reaches HOLD_MAX.
 *
 * What SQLite relies on stays true:
 * - Every other call on the file (read, size, truncate, sync, lock, file
 *   control, shared memory) writes the run out first, so the file looks
 *   to SQLite exactly as if each write had been made at once; a write
 *   that fails makes that call fail (a failed sync fails the commit).
 * - A commit is durable only after the WAL's sync, which writes the run
 *   out first. A crash before it loses only writes SQLite had not yet
 *   synced, which it never counts on.
 * - Other connections and processes learn of new frames only through the
 *   wal-index, the shared memory of the database file: every shared
 *   memory and lock call of a database file writes out its WAL's run
 *   first. The archive's connections sync the WAL before they publish a
 *   commit (synchronous=FULL), so nothing is left to write by then;
 *   should a write fail there all the same (xShmBarrier returns nothing),
 *   the WAL's next call returns the error.
 * Each file is used by one connection, and a connection by one thread at
 * a time (SQLite's rule), so a run needs no lock of its own. */
#include "vfs.h"

#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VFS_NAME	"dlq"
#define HOLD_FIRST	(64 * 1024)	/* first allocation of a run */
/* A run this long is written out: the default VFS writes at most 0x1ffff
 * bytes per call (it masks a larger count, then reports the disk full). */
#define HOLD_MAX	0x1ffff

struct run {
	unsigned char	*buf;
	size_t		 len;
	size_t		 cap;
	sqlite3_int64	 off;		/* file offset of buf[0] */
};

/* Which file a path named when it was looked at. */
struct ident {
	const char	*path;		/* NULL: not known */
	dev_t		 dev;
	ino_t		 ino;
};

struct vfile {
	sqlite3_file	 base;		/* pMethods: ours */
	sqlite3_file	*real;		/* the default VFS's file, after us */
	struct run	 run;
	int		 failed;	/* a run written out by a call that
					 * could not say it failed */
	int		 io_errno;	/* of the last write or sync: its
					 * errno when it failed, else 0 */
	const char	*name;		/* database: SQLite's name pointer */
	struct vfile	*wal;		/* database: its open WAL */
	struct vfile	*db;		/* WAL: its database */
	struct vfile	*next;		/* list of open databases */
	struct ident	 opened;	/* WAL: the file at its name at open */
	struct ident	 shm;		/* database: its -shm file at the
					 * first mapping (path: ours) */
};

static sqlite3_vfs *real_vfs;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfile *databases;	/* under open_lock */

/* A write to the default VFS's file, its errno kept (io_errno). */
static int
real_write(struct vfile *f, const void *p, int n, sqlite3_int64 off)
{
	int rc;

	errno = 0;
	rc = f->real->pMethods->xWrite(f->real, p, n, off);
	f->io_errno = rc == SQLITE_OK ? 0 : errno;
	return rc;
}

static int
write_run(struct vfile *f)
{
	struct run *r = &f->run;
	int rc;

	if (r->len == 0)
		return SQLITE_OK;
	rc = real_write(f, r->buf, (int)r->len, r->off);
	r->len = 0;
	return rc;
}

/* Before any call but a contiguous write: this file's run, and for a
 * database its WAL's, go out; an earlier failure is reported now. */
static int
settle(struct vfile *f)
{
	int rc = f->failed, rc2;

	f->failed = SQLITE_OK;
	rc2 = write_run(f);
	if (rc == SQLITE_OK)
		rc = rc2;
	if (f->wal != NULL && (rc2 = settle(f->wal)) != SQLITE_OK &&
	    rc == SQLITE_OK)
		rc = rc2;
	return rc;
}

static void
free_run(struct run *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

static bool
reserve(struct run *r, size_t need)
{
	size_t cap = r->cap ? r->cap : HOLD_FIRST;
	unsigned char *p;

	if (need <= r->cap)
		return true;
	while (cap < need)
		cap *= 2;
	if (cap > HOLD_MAX)
		cap = HOLD_MAX;
	if ((p = realloc(r->buf, cap)) == NULL)
		return false;
	r->buf = p;
	r->cap = cap;
	return true;
}

/* A database opened by name, or a WAL whose database's calls can write
 * its runs out (link_file). */
static bool
holds_runs(const struct vfile *f)
{
	return f->name != NULL || f->db != NULL;
}

static int
v_write(sqlite3_file *file, const void *p, int n, sqlite3_int64 off)
{
	struct vfile *f = (struct vfile *)file;
	struct run *r = &f->run;
	int rc;

	if (!holds_runs(f))
		return real_write(f, p, n, off);
	if (f->failed == SQLITE_OK && r->len > 0 &&
	    off == r->off + (sqlite3_int64)r->len &&
	    r->len + (size_t)n <= HOLD_MAX && reserve(r, r->len + (size_t)n)) {
		memcpy(r->buf + r->len, p, (size_t)n);
		r->len += (size_t)n;
		return SQLITE_OK;
	}
	rc = f->failed;
	f->failed = SQLITE_OK;
	if (rc != SQLITE_OK || (rc = write_run(f)) != SQLITE_OK)
		return rc;
	if ((size_t)n >= HOLD_MAX || !reserve(r, (size_t)n))
		return real_write(f, p, n, off);
	memcpy(r->buf, p, (size_t)n);
	r->len = (size_t)n;
	r->off = off;
	return SQLITE_OK;
}

static int
v_read(sqlite3_file *file, void *p, int n, sqlite3_int64 off)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xRead(f->real, p, n, off);
}

static int
v_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xTruncate(f->real, size);
}

static int
v_sync(sqlite3_file *file, int flags)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	if (rc != SQLITE_OK)
		return rc;
	errno = 0;
	rc = f->real->pMethods->xSync(f->real, flags);
	f->io_errno = rc == SQLITE_OK ? 0 : errno;
	return rc;
}

static int
v_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xFileSize(f->real, size);
}

static int
v_lock(sqlite3_file *file, int level)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc : f->real->pMethods->xLock(f->real, level);
}

static int
v_unlock(sqlite3_file *file, int level)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xUnlock(f->real, level);
}

static int
v_check_reserved_lock(sqlite3_file *file, int *out)
{
	struct vfile *f = (struct vfile *)file;

	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

/* Notes which file `path` (kept, not copied) names now; unknown when
 * it names none. */
static void
ident_take(struct ident *id, const char *path)
{
	struct stat st;

	id->path = path != NULL && stat(path, &st) == 0 ? path : NULL;
	if (id->path != NULL) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
	}
}

/* Whether a known file is no longer the one at its path. */
static bool
ident_moved(const struct ident *id)
{
	struct stat st;

	return id->path != NULL && (stat(id->path, &st) != 0 ||
	    st.st_dev != id->dev || st.st_ino != id->ino);
}

static int
v_file_control(sqlite3_file *file, int op, void *arg)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	if (op == DLQ_VFS_FCNTL_RELEASE) {
		free_run(&f->run);
		if (f->wal != NULL)
			free_run(&f->wal->run);
		return rc;
	}
	if (op == DLQ_VFS_FCNTL_IO_ERRNO) {
		*(int *)arg = f->io_errno != 0 ? f->io_errno :
		    f->wal != NULL ? f->wal->io_errno : 0;
		return rc;
	}
	if (op == DLQ_VFS_FCNTL_SIDE_MOVED) {
		*(int *)arg = (f->wal != NULL && ident_moved(&f->wal->opened)) ||
		    ident_moved(&f->shm);
		return rc;
	}
	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xFileControl(f->real, op, arg);
}

static int
v_sector_size(sqlite3_file *file)
{
	struct vfile *f = (struct vfile *)file;

	return f->real->pMethods->xSectorSize(f->real);
}

static int
v_device_characteristics(sqlite3_file *file)
{
	struct vfile *f = (struct vfile *)file;

	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* The -shm file a database's first mapping opened (the default VFS
 * names it after the database), to tell later whether it is still the
 * file at that path. */
static void
note_shm(struct vfile *f)
{
	char *path;
	size_t n;

	if (f->shm.path != NULL || f->name == NULL)
		return;
	n = strlen(f->name) + sizeof("-shm");
	if ((path = malloc(n)) == NULL)
		return;
	snprintf(path, n, "%s-shm", f->name);
	ident_take(&f->shm, path);
	if (f->shm.path == NULL)
		free(path);
}

static int
v_shm_map(sqlite3_file *file, int page, int size, int extend,
    void volatile **p)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	if (rc != SQLITE_OK)
		return rc;
	rc = f->real->pMethods->xShmMap(f->real, page, size, extend, p);
	if (rc == SQLITE_OK && *p != NULL)
		note_shm(f);
	return rc;
}

static int
v_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void
v_shm_barrier(sqlite3_file *file)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	if (rc != SQLITE_OK)
		(f->wal != NULL ? f->wal : f)->failed = rc;
	f->real->pMethods->xShmBarrier(f->real);
}

static int
v_shm_unmap(sqlite3_file *file, int delete_flag)
{
	struct vfile *f = (struct vfile *)file;
	int rc = settle(f);

	free((char *)f->shm.path);
	f->shm.path = NULL;
	return rc != SQLITE_OK ? rc :
	    f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

static int
v_close(sqlite3_file *file)
{
	struct vfile *f = (struct vfile *)file;
	struct vfile **pp;
	int rc = settle(f), rc2;

	pthread_mutex_lock(&open_lock);
	if (f->db != NULL)
		f->db->wal = NULL;
	if (f->wal != NULL)
		f->wal->db = NULL;
	for (pp = &databases; *pp != NULL; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	free_run(&f->run);
	free((char *)f->shm.path);
	rc2 = f->real->pMethods->xClose(f->real);
	return rc != SQLITE_OK ? rc : rc2;
}

/* Version 2: shared memory, but no memory-mapped reads (xFetch), which
 * would bypass a run. */
static const sqlite3_io_methods methods = {
	.iVersion = 2,
	.xClose = v_close,
	.xRead = v_read,
	.xWrite = v_write,
	.xTruncate = v_truncate,
	.xSync = v_sync,
	.xFileSize = v_file_size,
	.xLock = v_lock,
	.xUnlock = v_unlock,
	.xCheckReservedLock = v_check_reserved_lock,
	.xFileControl = v_file_control,
	.xSectorSize = v_sector_size,
	.xDeviceCharacteristics = v_device_characteristics,
	.xShmMap = v_shm_map,
	.xShmLock = v_shm_lock,
	.xShmBarrier = v_shm_barrier,
	.xShmUnmap = v_shm_unmap,
};

/* A WAL's runs are held only when its database's calls can write them
 * out: its database must be open through this VFS (SQLite opens it
 * first, and names the WAL after it). */
static void
link_file(struct vfile *f, const char *name, int flags)
{
	struct vfile *d;
	const char *db_name;

	pthread_mutex_lock(&open_lock);
	if ((flags & SQLITE_OPEN_MAIN_DB) && name != NULL) {
		f->name = name;
		f->next = databases;
		databases = f;
	} else if ((flags & SQLITE_OPEN_WAL) && name != NULL) {
		db_name = sqlite3_filename_database(name);
		for (d = databases; d != NULL; d = d->next)
			if (d->name == db_name && d->wal == NULL) {
				d->wal = f;
				f->db = d;
				break;
			}
	}
	pthread_mutex_unlock(&open_lock);
}

static int
v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
    int *out_flags)
{
	struct vfile *f = (struct vfile *)file;
	int rc;

	(void)vfs;
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
	if (rc != SQLITE_OK || f->real->pMethods == NULL ||
	    f->real->pMethods->iVersion < 2) {
		if (f->real->pMethods != NULL)
			f->real->pMethods->xClose(f->real);
		f->base.pMethods = NULL;
		return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
	}
	f->base.pMethods = &methods;
	link_file(f, name, flags);
	if (flags & SQLITE_OPEN_WAL)
		ident_take(&f->opened, name);
	return SQLITE_OK;
}

/* The rest is the default VFS's own. */
static int
v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return real_vfs->xDelete(real_vfs, name, sync_dir);
}

static int
v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int
v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static int
v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xRandomness(real_vfs, n, out);
}

static int
v_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return real_vfs->xSleep(real_vfs, us);
}

static int
v_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return real_vfs->xCurrentTime(real_vfs, out);
}

static int
v_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xGetLastError(real_vfs, n, out);
}

static int
v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

/* No extension loading through it: the archive loads none. */
static sqlite3_vfs vfs = {
	.iVersion = 2,
	.zName = VFS_NAME,
	.xOpen = v_open,
	.xDelete = v_delete,
	.xAccess = v_access,
	.xFullPathname = v_full_pathname,
	.xRandomness = v_randomness,
	.xSleep = v_sleep,
	.xCurrentTime = v_current_time,
	.xGetLastError = v_get_last_error,
	.xCurrentTimeInt64 = v_current_time_int64,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool registered;

static void
register_vfs(void)
{
	if (sqlite3_initialize() != SQLITE_OK ||
	    (real_vfs = sqlite3_vfs_find(NULL)) == NULL ||
	    real_vfs->iVersion < 2 || real_vfs->xCurrentTimeInt64 == NULL)
		return;
	vfs.szOsFile = (int)sizeof(struct vfile) + real_vfs->szOsFile;
	vfs.mxPathname = real_vfs->mxPathname;
	registered = sqlite3_vfs_register(&vfs, 0) == SQLITE_OK;
}

const char *
dlq_vfs_name(void)
{
	pthread_once(&once, register_vfs);
	return registered ? VFS_NAME : NULL;
}
