/** The product photo every benchmark POST sends: a small JPEG, as the test suite's requests do. */
import sharp from 'sharp';

export async function jpegBase64(width = 400, height = 500): Promise<string> {
  return (await sharp({ create: { width, height, channels: 3, background: '#2a6fdb' } }).jpeg().toBuffer()).toString('base64');
}
