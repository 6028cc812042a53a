/** The floors' one activity: returns its input. */
export async function echo(n: number): Promise<number> {
  return n;
}
