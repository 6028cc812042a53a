/**
 * The most pixels the service decodes in one image: 50 megapixels, room for the largest phone photos (8064x6048).
 * The API refuses a bigger image from its header, before any decoding, and every decode of an input is capped at
 * it too, so a small file that unpacks to gigabytes of pixels is refused instead of stalling a process.
 */
export const MAX_IMAGE_PIXELS = 50_000_000;
