/** @file One collective case as a multi-process test worker (mpi-worker.ts) records it and the tests (distributed*.test.ts) check it. */
export interface Case {
  name: string;
  dtype: string;
  shape: number[];
  got: number[];
  want: number[];
  ranOn: number[];
  /** Set for values computed as global arrays: whether reading the global array's value was refused. */
  spans?: boolean;
}
