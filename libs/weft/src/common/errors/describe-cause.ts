/** A cause as an error message quotes it: its name and message. */
export const describeCause = (cause: Error): string => `${cause.name}: ${cause.message}`;
