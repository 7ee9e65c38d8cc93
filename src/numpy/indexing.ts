/** @file jnp indexing: getitem, the at[] updater, take, take_along_axis, where. */
export {};
