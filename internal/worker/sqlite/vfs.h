/* vfs.h - the archive's SQLite files, written in fewer and larger calls.
 *
 * A shim over SQLite's default VFS that holds a run of contiguous writes
 * to a database or WAL file and hands it to the kernel in one call (see
 * vfs.c for what SQLite may still rely on). The files on disk are the
 * same as with the default VFS, and other programs (the sqlite3 shell)
 * open them as usual. */
#ifndef DLQ_VFS_H
#define DLQ_VFS_H

/* The VFS name to pass to sqlite3_open_v2; registered on first use.
 * NULL when it could not be registered (then use the default). */
const char *dlq_vfs_name(void);

/* File control opcode, on "main" of a connection opened with it: frees
 * the memory that held its runs (allocated again by the next write). */
#define DLQ_VFS_FCNTL_RELEASE	0x646c7101
/* File control opcode, on "main": sets the int at arg to 1 when the WAL
 * or the -shm file the connection has open is no longer the file at its
 * path (deleted or replaced), else 0. */
#define DLQ_VFS_FCNTL_SIDE_MOVED	0x646c7102
/* File control opcode, on "main": sets the int at arg to the errno of
 * the last write or sync of the database file, else of its WAL, that
 * failed (EFBIG, ENOSPC, EIO), 0 when the last one did not. SQLite does
 * not keep it for an error of COMMIT (sqlite3_system_errno says 0). */
#define DLQ_VFS_FCNTL_IO_ERRNO	0x646c7103

#endif
