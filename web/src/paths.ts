/** Where the dashboard's pages live (its JSON routes are api.ts's `API`). */
export const BASE = '/dashboard';
