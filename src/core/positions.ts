// Acknowledged read positions (DESIGN.md §15): reported by sources, carried to the primary,
// kept in checkpoints.

/** A file position: byte offset (acknowledged, DESIGN.md §15) in the file with this inode. */
export interface FilePosition {
  readonly inode: number;
  readonly offset: number;
  /** the file's device; with the inode and truncations, its identity */
  readonly dev?: number;
  /** truncations seen for this file (part of its lines' ids) */
  readonly truncations?: number;
  /** hash of the file's first bytes, to know it again by content in a checkpoint */
  readonly fingerprint?: string;
  /**
   * something (a partial line, a multiline entry) was open at `offset`: lines up to `read` were
   * delivered, except those of a stream at or after its offset in `streams` (DESIGN.md §21)
   */
  readonly read?: number;
  readonly streams?: Readonly<Record<string, number>>;
  /** a rotated file (renamed away, in its grace), reported under its new name */
  readonly rotated?: true;
}

/** Positions of one source: file path → position. */
export type SourcePositions = Record<string, FilePosition>;
